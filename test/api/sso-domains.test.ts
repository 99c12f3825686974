import { randomBytes } from 'node:crypto';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, type OrgOwner } from '../support/factories';
import { snapshot, snapshotDiff } from '../support/snapshot';
import { startDnsServer, type TestDnsServer } from '../support/dns';
import { enterpriseOrganization } from '../support/sso';
import { emailDomainVerified } from '../../src/scim/domains';
import type { ManualClock } from '../support/clock';

let t: TestApp;
let dns: TestDnsServer;
let org: OrgOwner;
beforeAll(async () => {
  dns = await startDnsServer();
  t = await createTestApp({ settings: { dnsServers: [dns.address] } });
  org = await enterpriseOrganization(t, 'Domains');
}, 120_000);
afterAll(async () => {
  await t.close();
  await dns.close();
});

const fresh = (label = 'corp') => `${label}-${randomBytes(4).toString('hex')}.example.com`;
const claim = (token: string, domain: string) => t.http.post('/v1/sso/domains').set(...bearer(token)).send({ domain });
const verify = (token: string, id: string) => t.http.post(`/v1/sso/domains/${id}/verify`).set(...bearer(token));

describe('claim and verify', () => {
  it('claims a domain with a TXT challenge, verifies it through DNS_SERVERS, lists, reads and deletes it', async () => {
    const domain = fresh();
    const res = await claim(org.token, `  ${domain.toUpperCase()}. `.trim());
    expect(res.status).toBe(201);
    const item = res.body.item;
    expect(item).toEqual({
      id: expect.stringMatching(/^dom_/),
      domain,
      status: 'pending',
      verification: { type: 'TXT', name: `_cp-challenge.${domain}`, value: expect.stringMatching(/^cp-domain-verification=[A-Za-z0-9_-]{32}$/) },
      createdAt: t.clock.now().toISOString(),
      verifiedAt: null,
    });
    expect(await emailDomainVerified(t.db, org.organizationId, `someone@${domain}`)).toBe(false);

    // Next to an unrelated TXT record: any record holding the value counts.
    const value: string = item.verification.value;
    dns.setTxt(item.verification.name, ['v=spf1 -all', value]);
    const verified = await verify(org.token, item.id);
    expect(verified.status).toBe(200);
    expect(verified.body.item).toEqual({ ...item, status: 'verified', verifiedAt: t.clock.now().toISOString() });
    expect(await emailDomainVerified(t.db, org.organizationId, `someone@${domain.toUpperCase()}`)).toBe(true);
    expect(await emailDomainVerified(t.db, org.organizationId, `someone@sub.${domain}`)).toBe(false);
    // Again: unchanged.
    expect((await verify(org.token, item.id)).body.item).toEqual(verified.body.item);

    const list = await t.http.get('/v1/sso/domains').set(...bearer(org.token));
    expect(list.body.items).toContainEqual(verified.body.item);
    expect((await t.http.get(`/v1/sso/domains/${item.id}`).set(...bearer(org.token))).body.item).toEqual(verified.body.item);

    const audit = await t.db.selectFrom('audit_logs').select('action').where('target_id', '=', item.id).orderBy('created_at').execute();
    expect(audit.map((a) => a.action)).toEqual(['sso_domain.created', 'sso_domain.verified']);

    expect((await t.http.delete(`/v1/sso/domains/${item.id}`).set(...bearer(org.token))).status).toBe(204);
    expect(await emailDomainVerified(t.db, org.organizationId, `someone@${domain}`)).toBe(false);
    const gone = await t.http.get(`/v1/sso/domains/${item.id}`).set(...bearer(org.token));
    expect([gone.status, gone.body.error]).toEqual([404, 'sso_domain_not_found']);
  });

  it.each([
    ['a wrong value', (name: string) => dns.setTxt(name, ['cp-domain-verification=wrong'])],
    ['no TXT record (the name exists)', (name: string) => dns.setTxt(name, 'nodata')],
    ['no such name (NXDOMAIN)', () => undefined],
  ])('%s → 409 domain_verification_failed, the domain stays pending', async (_label, publish) => {
    const res = await claim(org.token, fresh('unverified'));
    publish(res.body.item.verification.name);
    const before = await snapshot(t.db);
    const refused = await verify(org.token, res.body.item.id);
    expect([refused.status, refused.body.error]).toEqual([409, 'domain_verification_failed']);
    expect(refused.body.message).toContain('_cp-challenge.');
    expect(snapshotDiff(before, await snapshot(t.db))).toEqual([]);
    expect((await t.http.get(`/v1/sso/domains/${res.body.item.id}`).set(...bearer(org.token))).body.item.status).toBe('pending');
  });

  it('a domain verified by one organization is 409 domain_taken for another, at claim and at verify', async () => {
    const domain = fresh('shared');
    const other = await enterpriseOrganization(t, 'Rival');
    const mine = (await claim(org.token, domain)).body.item;
    const theirs = (await claim(other.token, domain)).body.item;
    expect(theirs.status).toBe('pending');
    // Both publish their own value; the first to verify wins.
    dns.setTxt(mine.verification.name, [mine.verification.value, theirs.verification.value]);
    expect((await verify(org.token, mine.id)).status).toBe(200);
    const late = await verify(other.token, theirs.id);
    expect([late.status, late.body.error]).toEqual([409, 'domain_taken']);
    const again = await claim((await enterpriseOrganization(t, 'Third')).token, domain);
    expect([again.status, again.body.error]).toEqual([409, 'domain_taken']);
    const dup = await claim(org.token, domain);
    expect([dup.status, dup.body.error]).toEqual([409, 'domain_exists']);
  });
});

describe('refused domains', () => {
  it.each([
    'gmail.com',
    'GoogleMail.com',
    'outlook.com',
    'hotmail.com',
    'live.com',
    'yahoo.com',
    'icloud.com',
    'proton.me',
    'gmx.de',
    'gmx.net',
    'yandex.ru',
    'mail.ru',
    'qq.com',
    '163.com',
    'eu.gmail.com',
    'com',
    'co.uk',
    'github.io',
    'corp.internal',
    'localhost',
    '192.168.1.10',
    'exa mple.com',
    '-bad.example.com',
    'example..com',
  ])('%s → 400 naming domain, nothing written', async (domain) => {
    const before = await snapshot(t.db);
    const res = await claim(org.token, domain);
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(['body', 'domain']);
    expect(snapshotDiff(before, await snapshot(t.db))).toEqual([]);
  });

  it('accepts an organization domain under a multi-label suffix and a subdomain', async () => {
    expect((await claim(org.token, `acme-${randomBytes(3).toString('hex')}.co.uk`)).status).toBe(201);
    expect((await claim(org.token, `eu.${fresh('sub')}`)).status).toBe(201);
  });
});

describe('who may', () => {
  it('member 403, API key 401 on writes, another organization 404, plan 402', async () => {
    const item = (await claim(org.token, fresh('guarded'))).body.item;
    const member = await addMember(t, org.organizationId, 'member');
    const denied = await claim(member.token, fresh());
    expect([denied.status, denied.body.reason]).toEqual([403, 'permission_required']);
    expect((await t.http.get('/v1/sso/domains').set(...bearer(member.token))).status).toBe(403);
    const key = (await t.http.post('/v1/api-keys').set(...bearer(org.token)).send({ name: 'k' })).body.key;
    expect((await t.http.post('/v1/sso/domains').set('x-api-key', key).send({ domain: fresh() })).status).toBe(401);
    expect((await t.http.post(`/v1/sso/domains/${item.id}/verify`).set('x-api-key', key)).status).toBe(401);
    expect((await t.http.delete(`/v1/sso/domains/${item.id}`).set('x-api-key', key)).status).toBe(401);

    const other = await enterpriseOrganization(t, 'Elsewhere');
    expect((await t.http.get(`/v1/sso/domains/${item.id}`).set(...bearer(other.token))).status).toBe(404);
    expect((await verify(other.token, item.id)).status).toBe(404);
    expect((await t.http.delete(`/v1/sso/domains/${item.id}`).set(...bearer(other.token))).status).toBe(404);

    const free = await createOrganization(t, 'Free');
    const refused = await claim(free.token, fresh());
    expect([refused.status, refused.body.error, refused.body.feature]).toEqual([402, 'enterprise_plan_required', 'sso']);
  });
});

// Last in the file: it moves the shared clock past the fresh-session window.
describe('fresh session', () => {
  it('claim, verify and delete need a recent sign-in', async () => {
    const item = (await claim(org.token, fresh('stale'))).body.item;
    (t.clock as ManualClock).advance(16 * 60_000);
    for (const res of [await claim(org.token, fresh()), await verify(org.token, item.id), await t.http.delete(`/v1/sso/domains/${item.id}`).set(...bearer(org.token))]) {
      expect([res.status, res.body.reason]).toEqual([403, 'fresh_session_required']);
    }
    expect((await t.http.post('/v1/auth/reauthenticate').set(...bearer(org.token)).send({ password: PASSWORD })).status).toBe(200);
    expect((await claim(org.token, fresh())).status).toBe(201);
  });
});

import { Secret, TOTP } from 'otpauth';
import type supertest from 'supertest';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type SignedUpUser } from '../support/factories';
import { countingApp } from '../support/statement-counter';
import type { ManualClock } from '../support/clock';
import { randomSecret, sha256Hex } from '../../src/lib/crypto';
import { newId } from '../../src/lib/ids';
import { insertApiKey } from '../../src/api-keys/store';

/**
 * What an organization's requireMfa asks of a member's other credentials
 * (docs/second-factors.md#requiring-it-of-an-organization): a person's API key follows the person's
 * standing, a service account's does not; removing one's last factor ends the second-factor
 * standing of every session of the user.
 */
let t: TestApp;
let clock: ManualClock;
beforeAll(async () => {
  t = await createTestApp();
  clock = t.clock as ManualClock;
});
afterAll(() => t.close());

function codeAt(secret: string): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: clock.now().getTime() });
}

async function enrolTotp(user: SignedUpUser): Promise<string> {
  const start = await t.http.post('/v1/me/mfa/totp').set(...bearer(user.token));
  expect(start.status).toBe(200);
  const confirm = await t.http.post('/v1/me/mfa/totp/confirm').set(...bearer(user.token)).send({ code: codeAt(start.body.secret) });
  expect(confirm.status).toBe(200);
  clock.advance(30_000);
  return start.body.secret as string;
}

async function requireMfa(owner: SignedUpUser): Promise<void> {
  await enrolTotp(owner);
  expect((await t.http.put('/v1/org/auth-policy').set(...bearer(owner.token)).send({ requireMfa: true })).status).toBe(200);
}

async function apiKeyOf(token: string): Promise<string> {
  const res = await t.http.post('/v1/api-keys').set(...bearer(token)).send({ name: 'ci' });
  expect(res.status).toBe(201);
  return res.body.key as string;
}

describe('a member\'s API key under requireMfa', () => {
  it('is 403 mfa_enrollment_required while its owner holds no factor, in the one principal statement, and works again once they enrol', async () => {
    const owner = await createOrganization(t, 'Keys');
    const admin = await addMember(t, owner.organizationId, 'admin');
    const key = await apiKeyOf(admin.token);
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);
    await requireMfa(owner);

    // Before: the factor-less admin's session got 403 while the key kept admin power.
    expect((await t.http.get('/v1/members').set(...bearer(admin.token))).body.reason).toBe('mfa_enrollment_required');
    for (const res of [
      await t.http.get('/v1/members').set('x-api-key', key),
      await t.http.post('/v1/teams').set('x-api-key', key).send({ name: 'Not made' }),
      await t.http.get('/v1/api-keys').set('x-api-key', key),
    ]) {
      expect({ status: res.status, error: res.body.error, reason: res.body.reason }).toEqual({ status: 403, error: 'forbidden', reason: 'mfa_enrollment_required' });
    }
    expect(await t.db.selectFrom('teams').select('id').where('organization_id', '=', owner.organizationId).execute()).toEqual([]);

    // Decided in the key's own statement: no round trip added.
    const { http, statements } = countingApp(t);
    let res: supertest.Response | undefined;
    expect(await statements(async () => (res = await http.get('/v1/members').set('x-api-key', key)))).toBe(1);
    expect(res!.status).toBe(403);

    // The owner's key (a factor held) is not affected; enrolling lifts it for the admin's key.
    const ownerKey = await apiKeyOf(owner.token);
    expect((await t.http.get('/v1/members').set('x-api-key', ownerKey)).status).toBe(200);
    await enrolTotp(admin);
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);
  });

  it('a service account\'s key is not a person\'s: requireMfa leaves it working', async () => {
    const owner = await createOrganization(t, 'Robots');
    const account = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'CI deploy', role: 'member' });
    expect(account.status).toBe(201);
    // A key of the service account's member (no user): the row its key route writes.
    const key = randomSecret('cpk');
    await insertApiKey(t.db, { id: newId('apiKey'), organizationId: owner.organizationId, memberId: account.body.item.memberId, name: 'ci', prefix: key.slice(0, 12), keyHash: sha256Hex(key), now: clock.now(), expiresAt: null, permissions: null });
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);
    await requireMfa(owner);
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);
  });

  it('does not reach into another organization: the same person\'s key there keeps working', async () => {
    const strict = await createOrganization(t, 'Strict');
    const relaxed = await createOrganization(t, 'Relaxed');
    const relaxedKey = await apiKeyOf(relaxed.token);
    await requireMfa(strict);
    // The relaxed owner holds no factor; the strict organization's policy is not theirs.
    expect((await t.http.get('/v1/members').set('x-api-key', relaxedKey)).status).toBe(200);
  });
});

describe('removing the last factor under requireMfa', () => {
  it('ends the organization access of every session of the member until they enrol again', async () => {
    const owner = await createOrganization(t, 'Strict sessions');
    await requireMfa(owner);
    const member = await addMember(t, owner.organizationId);
    const secret = await enrolTotp(member);
    // A second session of the member, signed in with the factor.
    const challenge = await t.http.post('/v1/auth/sign-in').send({ email: member.email, password: 'correct horse battery' });
    expect(challenge.body.mfaRequired).toBe(true);
    const other = await t.http.post('/v1/auth/mfa/verify').send({ challengeToken: challenge.body.challenge.token, method: 'totp', code: codeAt(secret) });
    expect(other.status).toBe(200);
    clock.advance(30_000);
    const sessions = [member.token, other.body.session.token as string];
    for (const token of sessions) expect((await t.http.get('/v1/members').set(...bearer(token))).status).toBe(200);

    expect((await t.http.delete('/v1/me/mfa/totp').set(...bearer(member.token)).send({ code: codeAt(secret) })).status).toBe(204);
    // Before: both sessions kept the organization for their lifetime.
    for (const token of sessions) {
      const res = await t.http.get('/v1/members').set(...bearer(token));
      expect([res.status, res.body.reason]).toEqual([403, 'mfa_enrollment_required']);
      expect((await t.http.get('/v1/me').set(...bearer(token))).status).toBe(200);
    }
    const listed = await t.http.get('/v1/me/sessions').set(...bearer(member.token));
    expect(listed.body.items.length).toBeGreaterThanOrEqual(2);
    expect(listed.body.items.every((s: { secondFactor: string | null }) => s.secondFactor === null)).toBe(true);

    // Enrolling again (in one session) lifts it for that session; the other signs in again with it.
    await enrolTotp({ ...member, token: sessions[1]! });
    expect((await t.http.get('/v1/members').set(...bearer(sessions[1]!))).status).toBe(200);
    expect((await t.http.get('/v1/members').set(...bearer(sessions[0]!))).status).toBe(403);
  });

  it('leaves the sessions alone while another factor remains', async () => {
    const owner = await createOrganization(t, 'Two factors');
    await requireMfa(owner);
    const member = await addMember(t, owner.organizationId);
    const secret = await enrolTotp(member);
    // A passkey counts as a factor too: the member's sessions keep their standing with it alone.
    await t.db.insertInto('passkeys').values({ id: newId('passkey'), user_id: member.userId, name: 'Key', credential_id: 'cred', public_key: 'pk', counter: '0', created_at: clock.now(), last_used_at: null }).execute();
    expect((await t.http.delete('/v1/me/mfa/totp').set(...bearer(member.token)).send({ code: codeAt(secret) })).status).toBe(204);
    expect((await t.http.get('/v1/members').set(...bearer(member.token))).status).toBe(200);
  });
});

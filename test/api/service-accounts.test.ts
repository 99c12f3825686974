import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgOwner } from '../support/factories';
import { sha256Hex } from '../../src/lib/crypto';
import type { ManualClock } from '../support/clock';
import { serviceAccountState, verifyServiceAccountSecret } from '../../src/service-accounts/service';

/**
 * Service accounts (docs/service-accounts.md): CRUD, the plan limit, no escalation, tenant
 * isolation, client secrets (shown once, five live at most) and what the authorization server
 * asks of them (verifyServiceAccountSecret, serviceAccountState).
 */
let t: TestApp;
const clock = () => t.clock as ManualClock;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const DAY = 24 * 3600_000;

async function enterprise(owner: OrgOwner): Promise<OrgOwner> {
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  return owner;
}

async function newAccount(token: string, body: Record<string, unknown> = {}) {
  const res = await t.http.post('/v1/service-accounts').set(...bearer(token)).send({ name: 'CI deploy', role: 'member', ...body });
  if (res.status !== 201) throw new Error(`create service account: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.item as { id: string; memberId: string; name: string };
}

async function newSecret(token: string, id: string, body: Record<string, unknown> = {}) {
  const res = await t.http.post(`/v1/service-accounts/${id}/secrets`).set(...bearer(token)).send(body);
  if (res.status !== 201) throw new Error(`create secret: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { item: { id: string; clientId: string }; clientSecret: string };
}

describe('POST /v1/service-accounts', () => {
  it('makes a member with no user, with its role, audited, counted against the plan', async () => {
    const owner = await createOrganization(t);
    const res = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'CI deploy', description: 'release pipeline', role: 'admin' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ok: true,
      item: {
        id: expect.stringMatching(/^svc_/),
        memberId: expect.stringMatching(/^om_/),
        name: 'CI deploy',
        description: 'release pipeline',
        role: 'admin',
        disabled: false,
        createdAt: t.clock.now().toISOString(),
        createdBy: { memberId: owner.memberId },
        lastUsedAt: null,
      },
    });
    const member = await t.db.selectFrom('members').select(['type', 'user_id', 'role', 'removed_at']).where('id', '=', res.body.item.memberId).executeTakeFirstOrThrow();
    expect(member).toEqual({ type: 'service_account', user_id: null, role: 'admin', removed_at: null });
    const entry = await t.db.selectFrom('audit_logs').select(['action', 'target_id', 'actor_member_id', 'changes']).where('target_id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(entry).toMatchObject({ action: 'service_account.created', actor_member_id: owner.memberId });
    expect(entry.changes).toMatchObject({ name: { from: null, to: 'CI deploy' }, role: { from: null, to: 'admin' }, memberId: { from: null, to: res.body.item.memberId } });
    // Free plan: two service accounts (they take no seat: usage.members stays 1).
    await newAccount(owner.token, { name: 'second' });
    const third = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'third', role: 'member' });
    expect(third.status).toBe(402);
    expect(third.body).toMatchObject({ error: 'plan_limit_reached', limit: 'serviceAccounts' });
    const billing = await t.http.get('/v1/billing').set(...bearer(owner.token));
    expect(billing.body.limits).toMatchObject({ members: 5, serviceAccounts: 2 });
    expect(billing.body.usage).toMatchObject({ members: 1, serviceAccounts: 2 });
    // The refused one wrote nothing.
    expect(await t.db.selectFrom('service_accounts').select('id').where('organization_id', '=', owner.organizationId).execute()).toHaveLength(2);
    // Enterprise: unlimited.
    await enterprise(owner);
    expect((await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'third', role: 'member' })).status).toBe(201);
    expect((await t.http.get('/v1/billing').set(...bearer(owner.token))).body.limits.serviceAccounts).toBeNull();
  });

  it('refuses bad input with the field named (400), and owner as a role', async () => {
    const owner = await createOrganization(t);
    const cases: [Record<string, unknown>, string[]][] = [
      [{ role: 'member' }, ['body', 'name']],
      [{ name: '', role: 'member' }, ['body', 'name']],
      [{ name: 'x'.repeat(256), role: 'member' }, ['body', 'name']],
      [{ name: 'x', description: 'd'.repeat(1001), role: 'member' }, ['body', 'description']],
      [{ name: 'x' }, ['body', 'role']],
      [{ name: 'x', role: 'owner' }, ['body', 'role']],
      [{ name: 'x', role: 'no-such-role' }, ['body', 'role']],
      [{ name: 'x', role: 'member', extra: 1 }, ['body', 'extra']],
    ];
    for (const [body, path] of cases) {
      const res = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send(body);
      expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 400, error: 'invalid_request' });
      expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(path);
    }
    expect(await t.db.selectFrom('service_accounts').select('id').where('organization_id', '=', owner.organizationId).execute()).toEqual([]);
  });

  it('gives no more than the caller holds, needs the permission and a session', async () => {
    const owner = await createOrganization(t);
    const role = await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: 'robot-keeper', name: 'Robot keeper', permissions: ['serviceAccounts.manage', 'members.read'] });
    expect(role.status).toBe(201);
    const keeper = await addMember(t, owner.organizationId, 'robot-keeper');
    const escalate = await t.http.post('/v1/service-accounts').set(...bearer(keeper.token)).send({ name: 'root', role: 'admin' });
    expect(escalate.status).toBe(403);
    expect(escalate.body).toMatchObject({ error: 'forbidden', reason: 'permission_not_held' });
    // Its own role it may give.
    expect((await t.http.post('/v1/service-accounts').set(...bearer(keeper.token)).send({ name: 'peer', role: 'robot-keeper' })).status).toBe(201);
    const member = await addMember(t, owner.organizationId, 'member');
    const denied = await t.http.post('/v1/service-accounts').set(...bearer(member.token)).send({ name: 'x', role: 'member' });
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ reason: 'permission_required' });
    const key = (await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' })).body.key;
    expect((await t.http.post('/v1/service-accounts').set('x-api-key', key).send({ name: 'x', role: 'member' })).status).toBe(401);
  });
});

describe('GET, PATCH and DELETE /v1/service-accounts', () => {
  it('lists newest first in pages, reads, renames and disables, audited', async () => {
    const owner = await createOrganization(t);
    const first = await newAccount(owner.token, { name: 'one' });
    clock().advance(5);
    const second = await newAccount(owner.token, { name: 'two', description: 'второй' });
    const page1 = await t.http.get('/v1/service-accounts?limit=1').set(...bearer(owner.token));
    expect(page1.status).toBe(200);
    expect(page1.body.items).toEqual([second]);
    const page2 = await t.http.get('/v1/service-accounts').query({ limit: 1, cursor: page1.body.nextCursor }).set(...bearer(owner.token));
    expect(page2.body).toEqual({ items: [first], nextCursor: null });
    expect((await t.http.get(`/v1/service-accounts/${first.id}`).set(...bearer(owner.token))).body).toEqual({ ok: true, item: first });

    const renamed = await t.http.patch(`/v1/service-accounts/${first.id}`).set(...bearer(owner.token)).send({ name: 'uno', description: 'first' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.item).toEqual({ ...first, name: 'uno', description: 'first' });
    const disabled = await t.http.patch(`/v1/service-accounts/${first.id}`).set(...bearer(owner.token)).send({ disabled: true, description: null });
    expect(disabled.body.item).toEqual({ ...first, name: 'uno', description: null, disabled: true });
    const entries = await t.db.selectFrom('audit_logs').select(['action', 'changes']).where('target_id', '=', first.id).orderBy('seq').execute();
    expect(entries.map((e) => e.action)).toEqual(['service_account.created', 'service_account.updated', 'service_account.disabled']);
    expect(entries[2]!.changes).toEqual({ description: { from: 'first', to: null }, disabled: { from: false, to: true } });
    const enabled = await t.http.patch(`/v1/service-accounts/${first.id}`).set(...bearer(owner.token)).send({ disabled: false });
    expect(enabled.body.item.disabled).toBe(false);

    for (const body of [{}, { name: '' }, { disabled: 'yes' }, { description: 'd'.repeat(1001) }, { role: 'admin' }]) {
      const bad = await t.http.patch(`/v1/service-accounts/${first.id}`).set(...bearer(owner.token)).send(body);
      expect({ body, status: bad.status }).toEqual({ body, status: 400 });
    }
  });

  it('deletes: its member is removed, its secrets go, it is gone from the list', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner.token);
    const { clientSecret } = await newSecret(owner.token, account.id);
    const deletion = await t.http.delete(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token));
    expect(deletion.status).toBe(204);
    expect((await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token))).body).toMatchObject({ error: 'service_account_not_found' });
    expect((await t.http.delete(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token))).status).toBe(404);
    expect((await t.http.get('/v1/service-accounts').set(...bearer(owner.token))).body.items).toEqual([]);
    const member = await t.db.selectFrom('members').select('removed_at').where('id', '=', account.memberId).executeTakeFirstOrThrow();
    expect(member.removed_at).not.toBeNull();
    expect(await t.db.selectFrom('service_account_secrets').select('id').where('service_account_id', '=', account.id).execute()).toEqual([]);
    expect(await verifyServiceAccountSecret(t.db, account.id, clientSecret, t.clock.now())).toBeNull();
    expect(await serviceAccountState(t.db, account.id)).toEqual({ exists: false, disabled: false, organizationId: null, memberId: null });
    // A deleted one makes room under the plan's limit.
    await newAccount(owner.token);
    await newAccount(owner.token);
  });

  it("answers another organization's service account as not found (404), and needs the permission", async () => {
    const a = await createOrganization(t, 'A');
    const b = await createOrganization(t, 'B');
    const account = await newAccount(a.token);
    const { item: secret } = await newSecret(a.token, account.id);
    const calls = [
      t.http.get(`/v1/service-accounts/${account.id}`),
      t.http.patch(`/v1/service-accounts/${account.id}`).send({ name: 'mine' }),
      t.http.delete(`/v1/service-accounts/${account.id}`),
      t.http.post(`/v1/service-accounts/${account.id}/secrets`).send({}),
      t.http.get(`/v1/service-accounts/${account.id}/secrets`),
      t.http.delete(`/v1/service-accounts/${account.id}/secrets/${secret.id}`),
    ];
    for (const call of calls) {
      const res = await call.set(...bearer(b.token));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('service_account_not_found');
    }
    expect((await t.http.get('/v1/service-accounts').set(...bearer(b.token))).body.items).toEqual([]);
    const member = await addMember(t, a.organizationId);
    expect((await t.http.get('/v1/service-accounts').set(...bearer(member.token))).status).toBe(403);
    expect((await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(a.token))).body.item.name).toBe('CI deploy');
  });

  it('refuses changes to a service account holding permissions the caller lacks', async () => {
    const owner = await createOrganization(t);
    await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: 'robot-keeper', name: 'Robot keeper', permissions: ['serviceAccounts.manage'] });
    const keeper = await addMember(t, owner.organizationId, 'robot-keeper');
    const strong = await newAccount(owner.token, { role: 'admin' });
    for (const call of [
      t.http.patch(`/v1/service-accounts/${strong.id}`).send({ disabled: true }),
      t.http.delete(`/v1/service-accounts/${strong.id}`),
      t.http.post(`/v1/service-accounts/${strong.id}/secrets`).send({}),
    ]) {
      const res = await call.set(...bearer(keeper.token));
      expect(res.status).toBe(403);
      expect(res.body.reason).toBe('member_permissions_not_held');
    }
    expect((await t.http.get(`/v1/service-accounts/${strong.id}`).set(...bearer(keeper.token))).body.item.disabled).toBe(false);
  });
});

describe('service-account secrets', () => {
  it('shows a secret once, stores its hash, lists it without it, and verifies it for the authorization server', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner.token);
    const expiresAt = new Date(t.clock.now().getTime() + 90 * DAY).toISOString();
    const res = await t.http.post(`/v1/service-accounts/${account.id}/secrets`).set(...bearer(owner.token)).send({ expiresAt });
    expect(res.status).toBe(201);
    const clientSecret: string = res.body.clientSecret;
    expect(clientSecret).toMatch(/^cpc_[A-Za-z0-9_-]{43}$/);
    expect(res.body.item).toEqual({ id: expect.stringMatching(/^sas_/), clientId: account.id, createdAt: t.clock.now().toISOString(), expiresAt, lastUsedAt: null });
    const row = await t.db.selectFrom('service_account_secrets').select(['secret_hash']).where('id', '=', res.body.item.id).executeTakeFirstOrThrow();
    expect(row.secret_hash).toBe(sha256Hex(clientSecret));

    const listed = await t.http.get(`/v1/service-accounts/${account.id}/secrets`).set(...bearer(owner.token));
    expect(listed.body).toEqual({ items: [res.body.item], nextCursor: null });
    // Never again: not in lists, audit entries, events or logs.
    const audit = await t.db.selectFrom('audit_logs').select(['action', 'changes']).where('organization_id', '=', owner.organizationId).execute();
    const events = await t.db.selectFrom('events').select(['data']).where('organization_id', '=', owner.organizationId).execute();
    expect(audit.find((e) => e.action === 'service_account.secret_created')?.changes).toEqual({ secretId: { from: null, to: res.body.item.id }, expiresAt: { from: null, to: expiresAt } });
    for (const text of [JSON.stringify(listed.body), JSON.stringify(audit), JSON.stringify(events), t.logs.join('\n')]) {
      expect(text).not.toContain(clientSecret);
      expect(text).not.toContain(row.secret_hash);
    }

    const now = t.clock.now();
    expect(await verifyServiceAccountSecret(t.db, account.id, clientSecret, now)).toEqual({ organizationId: owner.organizationId, memberId: account.memberId, serviceAccountId: account.id });
    expect(await verifyServiceAccountSecret(t.db, account.id, `${clientSecret}x`, now)).toBeNull();
    expect(await verifyServiceAccountSecret(t.db, account.id, '', now)).toBeNull();
    const other = await newAccount(owner.token, { name: 'other' });
    expect(await verifyServiceAccountSecret(t.db, other.id, clientSecret, now)).toBeNull();
    // Used: stamped on the secret and the account, at most once a minute.
    const used = (await t.http.get(`/v1/service-accounts/${account.id}/secrets`).set(...bearer(owner.token))).body.items[0];
    expect(used.lastUsedAt).toBe(now.toISOString());
    clock().advance(30_000);
    await verifyServiceAccountSecret(t.db, account.id, clientSecret, t.clock.now());
    expect((await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token))).body.item.lastUsedAt).toBe(now.toISOString());
    clock().advance(31_000);
    await verifyServiceAccountSecret(t.db, account.id, clientSecret, t.clock.now());
    expect((await t.http.get(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token))).body.item.lastUsedAt).toBe(t.clock.now().toISOString());

    // Expired: no longer verifies (and stays listed, so an admin sees why).
    expect(await verifyServiceAccountSecret(t.db, account.id, clientSecret, new Date(Date.parse(expiresAt) + 1))).toBeNull();
    // Disabled: refused until enabled again.
    await t.http.patch(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token)).send({ disabled: true });
    expect(await verifyServiceAccountSecret(t.db, account.id, clientSecret, t.clock.now())).toBeNull();
    expect(await serviceAccountState(t.db, account.id)).toEqual({ exists: true, disabled: true, organizationId: owner.organizationId, memberId: account.memberId });
    await t.http.patch(`/v1/service-accounts/${account.id}`).set(...bearer(owner.token)).send({ disabled: false });
    expect(await verifyServiceAccountSecret(t.db, account.id, clientSecret, t.clock.now())).not.toBeNull();
    expect(await serviceAccountState(t.db, 'svc_01m986xzgbfexs0rehd17f768p')).toMatchObject({ exists: false });
    // Deleted secret: refused at once.
    expect((await t.http.delete(`/v1/service-accounts/${account.id}/secrets/${res.body.item.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect(await verifyServiceAccountSecret(t.db, account.id, clientSecret, t.clock.now())).toBeNull();
    const again = await t.http.delete(`/v1/service-accounts/${account.id}/secrets/${res.body.item.id}`).set(...bearer(owner.token));
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('service_account_secret_not_found');
  });

  it('keeps at most five unexpired secrets: the sixth is 409, an expired one makes room', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner.token);
    const soon = new Date(t.clock.now().getTime() + DAY).toISOString();
    await newSecret(owner.token, account.id, { expiresAt: soon });
    for (let i = 0; i < 4; i += 1) await newSecret(owner.token, account.id);
    const sixth = await t.http.post(`/v1/service-accounts/${account.id}/secrets`).set(...bearer(owner.token)).send({});
    expect(sixth.status).toBe(409);
    expect(sixth.body).toEqual({ error: 'secret_limit_reached', message: expect.any(String) });
    expect(await t.db.selectFrom('service_account_secrets').select('id').where('service_account_id', '=', account.id).execute()).toHaveLength(5);
    clock().advance(DAY + 1);
    // The first one expired; fresh sessions for the owner come from signing in again.
    const signIn = await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: 'correct horse battery' });
    const token: string = signIn.body.session.token;
    expect((await t.http.post(`/v1/service-accounts/${account.id}/secrets`).set(...bearer(token)).send({})).status).toBe(201);
    expect((await t.http.get(`/v1/service-accounts/${account.id}/secrets?limit=100`).set(...bearer(token))).body.items).toHaveLength(6);
  });

  it('needs a recent sign-in and a future expiry; an API key cannot make one', async () => {
    const owner = await createOrganization(t);
    const account = await newAccount(owner.token);
    const past = await t.http.post(`/v1/service-accounts/${account.id}/secrets`).set(...bearer(owner.token)).send({ expiresAt: t.clock.now().toISOString() });
    expect(past.status).toBe(400);
    expect(past.body.details).toEqual([{ message: 'must be in the future', path: ['body', 'expiresAt'] }]);
    const notDate = await t.http.post(`/v1/service-accounts/${account.id}/secrets`).set(...bearer(owner.token)).send({ expiresAt: 'soon' });
    expect(notDate.body.details[0].path).toEqual(['body', 'expiresAt']);
    const badId = await t.http.get('/v1/service-accounts/svc_nope/secrets').set(...bearer(owner.token));
    expect(badId.status).toBe(400);
    expect(badId.body.details[0].path).toEqual(['path', 'serviceAccountId']);
    const key = (await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'k' })).body.key;
    expect((await t.http.post(`/v1/service-accounts/${account.id}/secrets`).set('x-api-key', key).send({})).status).toBe(401);
    // The key may read and delete (not session-only).
    expect((await t.http.get(`/v1/service-accounts/${account.id}/secrets`).set('x-api-key', key)).status).toBe(200);
    clock().advance(t.settings.freshSessionMaxAgeMs + 1000);
    const stale = await t.http.post(`/v1/service-accounts/${account.id}/secrets`).set(...bearer(owner.token)).send({});
    expect(stale.status).toBe(403);
    expect(stale.body.reason).toBe('fresh_session_required');
  });
});

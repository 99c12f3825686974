import type supertest from 'supertest';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization } from '../support/factories';
import { countingApp } from '../support/statement-counter';
import { organizationContext } from '../../src/org/store';

let t: TestApp;
let http: ReturnType<typeof supertest>;
let statements: ReturnType<typeof countingApp>['statements'];
beforeAll(async () => {
  t = await createTestApp();
  ({ http, statements } = countingApp(t));
});
afterAll(() => t.close());

describe('permission checks cost no round trip', () => {
  it('GET /v1/org is one statement for a custom role, its permissions included', async () => {
    const owner = await createOrganization(t);
    const role = await t.http.post('/v1/roles').set(...bearer(owner.token)).send({ key: 'org-reader', name: 'Org reader', permissions: ['org.update'] });
    expect(role.status).toBe(201);
    const member = await addMember(t, owner.organizationId);
    expect((await t.http.post(`/v1/members/${member.memberId}/role`).set(...bearer(owner.token)).send({ role: 'org-reader' })).status).toBe(200);

    let res: supertest.Response | undefined;
    expect(await statements(async () => (res = await http.get('/v1/org').set(...bearer(member.token))))).toBe(1);
    expect(res!.status).toBe(200);
    expect(res!.body.currentMember.role).toBe('org-reader');
    // The permission is decided with the principal: a guarded write by the custom role costs the
    // statements the owner's (built-in role) costs, no more.
    const byCustomRole = await statements(async () => (res = await http.patch('/v1/org').set(...bearer(member.token)).send({ name: 'Renamed' })));
    expect(res!.status).toBe(200);
    const byOwner = await statements(async () => (res = await http.patch('/v1/org').set(...bearer(owner.token)).send({ name: 'Renamed again' })));
    expect(res!.status).toBe(200);
    expect(byCustomRole).toBe(byOwner);
    // A refusal is decided from the principal alone: one statement (the session).
    expect(await statements(async () => (res = await http.post('/v1/teams').set(...bearer(member.token)).send({ name: 'No' })))).toBe(1);
    expect([res!.status, res!.body.reason]).toEqual([403, 'org_admin_required']);
  });
});

/**
 * An enterprise organization, a service account of it and that account's client-credentials token,
 * used once (the first use reads the verification keys once per process).
 */
async function serviceAccountToken(orgName: string, accountName: string) {
  const owner = await createOrganization(t, orgName);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const sa = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: accountName, role: 'member' });
  const secret = await t.http.post(`/v1/service-accounts/${sa.body.item.id}/secrets`).set(...bearer(owner.token)).send({});
  const issued = await t.http.post('/oauth/token').auth(sa.body.item.id, secret.body.clientSecret).type('form').send({ grant_type: 'client_credentials', scope: 'teams.read' });
  expect(issued.status).toBe(200);
  const token = issued.body.access_token as string;
  expect((await http.get('/v1/teams').set(...bearer(token))).status).toBe(200);
  return { owner, token, memberId: sa.body.item.memberId as string };
}

describe('an OAuth access token costs one statement, as a session does', () => {
  it('checks its member, client, revocation and permissions in the one principal query', async () => {
    const { owner, token } = await serviceAccountToken('Tokens', 'CI');

    let res: supertest.Response | undefined;
    const byToken = await statements(async () => (res = await http.get('/v1/teams').set(...bearer(token))));
    expect(res!.status).toBe(200);
    const bySession = await statements(async () => (res = await http.get('/v1/teams').set(...bearer(owner.token))));
    expect(byToken).toBe(bySession);
    // A refusal by scope is decided from the principal alone: one statement.
    expect(await statements(async () => (res = await http.post('/v1/teams').set(...bearer(token)).send({ name: 'No' })))).toBe(1);
    expect(res!.status).toBe(403);
  });

  it('a client_credentials token of a service account costs one statement: its lookup reads the secret hashes its check compares', async () => {
    const owner = await createOrganization(t, 'Token issue');
    await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
    const sa = await t.http.post('/v1/service-accounts').set(...bearer(owner.token)).send({ name: 'Issuer', role: 'member' });
    const first = await t.http.post(`/v1/service-accounts/${sa.body.item.id}/secrets`).set(...bearer(owner.token)).send({});
    const second = await t.http.post(`/v1/service-accounts/${sa.body.item.id}/secrets`).set(...bearer(owner.token)).send({});
    const ask = (secret: string) => http.post('/oauth/token').auth(sa.body.item.id, secret).type('form').send({ grant_type: 'client_credentials', scope: 'teams.read' });
    // The first use of each secret stamps it (once a minute), a write of its own.
    expect((await ask(first.body.clientSecret)).status).toBe(200);
    expect((await ask(second.body.clientSecret)).status).toBe(200);

    let res: supertest.Response | undefined;
    expect(await statements(async () => (res = await ask(second.body.clientSecret)))).toBe(1);
    expect(res!.status).toBe(200);
    expect(await statements(async () => (res = await ask(`${second.body.clientSecret}x`)))).toBe(1);
    expect([res!.status, res!.body.error]).toEqual([401, 'invalid_client']);
    // A secret deleted is refused from the next request.
    expect((await t.http.delete(`/v1/service-accounts/${sa.body.item.id}/secrets/${first.body.item.id}`).set(...bearer(owner.token))).status).toBe(204);
    expect((await ask(first.body.clientSecret)).body.error).toBe('invalid_client');
    expect((await ask(second.body.clientSecret)).status).toBe(200);
  });

  it('GET /v1/org reads its answer in the token\'s one statement, the answer the plain read gives', async () => {
    const { owner, token, memberId } = await serviceAccountToken('Token org', 'Reader');

    let res: supertest.Response | undefined;
    expect(await statements(async () => (res = await http.get('/v1/org').set(...bearer(token))))).toBe(1);
    expect(res!.status).toBe(200);
    expect(res!.body.currentMember).toMatchObject({ id: memberId, type: 'service_account' });
    // The handler's own read, without the preload, answers the same.
    expect(res!.body).toEqual(JSON.parse((await organizationContext(t.db, owner.organizationId, memberId))!));
  });
});

describe('hot paths in few round trips', () => {
  it('GET /v1/members: a first or later page is one statement (read with the session), the same page as read alone', async () => {
    const owner = await createOrganization(t, 'Paged');
    const members = [await addMember(t, owner.organizationId), await addMember(t, owner.organizationId, 'admin'), await addMember(t, owner.organizationId)];
    // A suspended member is listed as such.
    await t.db.updateTable('members').set({ suspended_at: t.clock.now() }).where('id', '=', members[0]!.memberId).execute();
    const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'reader' });
    expect(key.status).toBe(201);

    let res: supertest.Response | undefined;
    expect(await statements(async () => (res = await http.get('/v1/members?limit=3').set(...bearer(owner.token))))).toBe(1);
    expect(res!.status).toBe(200);
    // An API key has no session loader: the page it reads is the plain query's, and must be the same.
    const plain = await http.get('/v1/members?limit=3').set('x-api-key', key.body.key);
    expect(plain.status).toBe(200);
    expect(res!.body.items).toEqual(plain.body.items);
    expect(res!.body.items.map((m: { status: string }) => m.status)).toContain('suspended');
    expect(res!.body.items).toHaveLength(3);
    expect(typeof res!.body.nextCursor).toBe('string');

    // The cursor the preloaded page made leads where the plain one's does.
    const next = await statements(async () => (res = await http.get('/v1/members').query({ limit: 3, cursor: res!.body.nextCursor }).set(...bearer(owner.token))));
    expect(next).toBe(1);
    const plainNext = await http.get('/v1/members').query({ limit: 3, cursor: plain.body.nextCursor }).set('x-api-key', key.body.key);
    expect(res!.body).toEqual(plainNext.body);
    expect(res!.body.items).toHaveLength(1);
    expect(res!.body.nextCursor).toBeNull();

    // The default page size, and a page that is the whole list (no cursor).
    expect(await statements(async () => (res = await http.get('/v1/members').set(...bearer(owner.token))))).toBe(1);
    expect([res!.body.items.length, res!.body.nextCursor]).toEqual([4, null]);
    // A cursor of another list, or a forged one, is refused as before (the session read alone).
    for (const name of ['One', 'Two']) expect((await http.post('/v1/teams').set(...bearer(owner.token)).send({ name })).status).toBe(201);
    const foreign = (await http.get('/v1/teams?limit=1').set(...bearer(owner.token))).body.nextCursor as string;
    expect(typeof foreign).toBe('string');
    for (const cursor of [foreign, 'forged.cursor']) {
      const bad = await http.get('/v1/members').query({ limit: 3, cursor }).set(...bearer(owner.token));
      expect([bad.status, bad.body.details?.[0]?.path]).toEqual([400, ['query', 'cursor']]);
    }
    // A limit validation refuses is refused as before.
    expect((await http.get('/v1/members?limit=101').set(...bearer(owner.token))).status).toBe(400);
  });

  it('POST /v1/invitations: the session, one read, the two mail budgets in one statement, and one write statement', async () => {
    const owner = await createOrganization(t, 'Inviting');
    let res: supertest.Response | undefined;
    // The budgets (the organization's invitations, the recipient's mail: docs/mail.md) are spent
    // apart from the write, which may still be refused (a pending invitation), but together.
    expect(await statements(async () => (res = await http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: 'someone@example.com', role: 'member' })))).toBe(4);
    expect(res!.status).toBe(201);
    // The message, the invitation, the audit entry and the event were all written.
    const invitation = await t.db.selectFrom('invitations').select(['mail_message_id', 'status']).where('id', '=', res!.body.item.id).executeTakeFirstOrThrow();
    expect(invitation.status).toBe('pending');
    expect(await t.db.selectFrom('mail_messages').select('kind').where('id', '=', invitation.mail_message_id!).executeTakeFirst()).toEqual({ kind: 'invitation' });
    expect(await t.db.selectFrom('audit_logs').select('action').where('target_id', '=', res!.body.item.id).execute()).toEqual([{ action: 'invitation.created' }]);
    expect(await t.db.selectFrom('events').select('type').where('organization_id', '=', owner.organizationId).where('type', '=', 'invitation.created').execute()).toHaveLength(1);
  });

  it('POST /v1/teams without members: the session and one write statement (team, audit entry, event)', async () => {
    const owner = await createOrganization(t, 'Teaming');
    let res: supertest.Response | undefined;
    expect(await statements(async () => (res = await http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Platform' })))).toBe(2);
    expect(res!.status).toBe(201);
    expect(res!.body.item).toMatchObject({ name: 'Platform', memberCount: 0 });
    expect(await t.db.selectFrom('audit_logs').select('action').where('target_id', '=', res!.body.item.id).execute()).toEqual([{ action: 'team.created' }]);
    expect(await t.db.selectFrom('events').select('type').where('organization_id', '=', owner.organizationId).where('type', '=', 'team.created').execute()).toHaveLength(1);
    // A name taken answers 409 and writes nothing more.
    const again = await http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'platform' });
    expect([again.status, again.body.error]).toEqual([409, 'team_name_taken']);
    expect(await t.db.selectFrom('audit_logs').select('action').where('organization_id', '=', owner.organizationId).where('action', '=', 'team.created').execute()).toHaveLength(1);
    expect(await t.db.selectFrom('events').select('type').where('organization_id', '=', owner.organizationId).where('type', '=', 'team.created').execute()).toHaveLength(1);
  });
});

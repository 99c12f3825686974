import { createHash } from 'node:crypto';
import pino from 'pino';
import * as oauth from 'openid-client';
import type { ManualClock } from '../support/clock';
import { SecretBox } from '../../src/lib/crypto';
import { createOutbound } from '../../src/outbound';
import { createJobRunner, type JobRunner } from '../../src/jobs';
import { bearer, createOrganization, addMember, PASSWORD, type OrgOwner } from '../support/factories';
import { discover, serviceAccountClient, startOAuthApp, type OAuthTestApp } from '../support/oauth';
import { scimClient } from '../support/scim';
import { rowsOfOrganization } from '../support/org-tables';
import { newId } from '../../src/lib/ids';
import { OrganizationLifecycle } from '../../src/org/lifecycle-job';
import * as lifecycleStore from '../../src/org/lifecycle-store';
import { PURGE_STEPS } from '../../src/org/registry';

/**
 * Organization deletion through HTTP (docs/organization-deletion.md#deletion): the lock, the restore, the
 * notices and the purge, which leaves no row of the organization and touches no other one.
 */
let t: OAuthTestApp;
const DAY = 24 * 3600_000;
beforeAll(async () => {
  t = await startOAuthApp({ env: { ORG_DELETION_GRACE: '7d', ORG_PURGE_BATCH: '3' } });
});
afterAll(() => t.close());

const clock = () => t.clock as ManualClock;

function lifecycleRunner(): JobRunner {
  return createJobRunner({
    db: t.db,
    clock: t.clock,
    logger: pino({ level: 'silent' }),
    secrets: new SecretBox(t.settings.secretKey!),
    outbound: createOutbound({ allowedNetworks: [] }),
    settings: t.settings,
    kinds: { webhooks: false, mail: false, lifecycle: true },
  });
}

async function runLifecycle(): Promise<void> {
  const runner = lifecycleRunner();
  await runner.runOnce();
  await runner.stop();
}

/** A fresh session for the owner (deletion and restore need one). */
async function freshSession(owner: { email: string }): Promise<string> {
  const res = await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: PASSWORD });
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${JSON.stringify(res.body)} ${t.logs.filter((l) => l.includes('"level":50')).slice(-3).join('').slice(0, 3000)}`);
  return res.body.session.token;
}

/** Tables still holding rows of a purged organization, but for the tombstone the purge keeps on purpose. */
const KEPT = new Set(PURGE_STEPS.filter((s) => s.kind === 'keep').map((s) => s.table));
const leftOf = (counts: Record<string, number>) => Object.entries(counts).filter(([table, n]) => n > 0 && !KEPT.has(table));

const deleteOrg = (token: string, confirm: string) => t.http.delete('/v1/org').set(...bearer(token)).send({ confirm });

/** An organization with something in most of its tables, made through the API. */
async function populated(name: string) {
  const owner = await createOrganization(t, name);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const member = await addMember(t, owner.organizationId, 'admin');
  const team = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Core' });
  expect(team.status).toBe(201);
  expect((await t.http.put(`/v1/teams/${team.body.item.id}/members/${member.memberId}`).set(...bearer(owner.token))).status).toBeLessThan(300);
  const key = await t.http.post('/v1/api-keys').set(...bearer(owner.token)).send({ name: 'deploy' });
  expect(key.status).toBe(201);
  const scim = await t.http.post('/v1/scim/tokens').set(...bearer(owner.token)).send({ name: 'IdP' });
  expect(scim.status).toBe(201);
  const worker = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name: 'w' });
  expect(worker.status).toBe(201);
  const hook = await t.http.post('/v1/webhooks').set(...bearer(owner.token)).send({ url: 'https://hooks.example.test/in', events: ['*'] });
  expect(hook.status).toBe(201);
  const invitation = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: `invitee-${newId('member').slice(-8)}@example.com`, role: 'member' });
  expect(invitation.status).toBe(201);
  const sa = await serviceAccountClient(t, owner, 'member');
  // A SAML connection with a replay-guard row, which carries only its connection's id.
  const connectionId = newId('ssoConnection');
  const now = t.clock.now();
  await t.db.insertInto('sso_connections').values({ id: connectionId, organization_id: owner.organizationId, type: 'saml', name: 'IdP', saml_idp_entity_id: 'https://idp.example.test', saml_idp_sso_url: 'https://idp.example.test/sso', saml_idp_certificate: 'MIIB', created_at: now, updated_at: now } as never).execute();
  await t.db.insertInto('sso_saml_assertions').values({ connection_id: connectionId, assertion_id: `a-${connectionId}`, created_at: now, expires_at: new Date(now.getTime() + DAY) }).execute();
  return { owner, member, apiKey: key.body.key as string, scimToken: scim.body.token as string, worker: { id: worker.body.item.id as string, hostToken: worker.body.hostToken as string }, sa, connectionId, webhookId: hook.body.item.id as string };
}

describe('DELETE /v1/org', () => {
  it('needs the owner, a fresh session and the name, exactly', async () => {
    const owner = await createOrganization(t, 'Named Co');
    const admin = await addMember(t, owner.organizationId, 'admin');
    const wrong = await deleteOrg(owner.token, 'named co');
    expect(wrong.status).toBe(400);
    expect(wrong.body.details).toEqual([expect.objectContaining({ path: ['body', 'confirm'] })]);
    const missing = await t.http.delete('/v1/org').set(...bearer(owner.token)).send({});
    expect(missing.status).toBe(400);
    expect(missing.body.details[0].path).toEqual(['body', 'confirm']);
    const byAdmin = await deleteOrg(admin.token, 'Named Co');
    expect([byAdmin.status, byAdmin.body.reason]).toEqual([403, 'owner_required']);
    clock().advance(16 * 60_000);
    const stale = await deleteOrg(owner.token, 'Named Co');
    expect([stale.status, stale.body.reason]).toEqual([403, 'fresh_session_required']);
    expect(await t.db.selectFrom('organizations').select('deletion_scheduled_at').where('id', '=', owner.organizationId).executeTakeFirstOrThrow()).toEqual({ deletion_scheduled_at: null });
  });

  it('locks the organization at once: 403 organization_deleted for its members, 401 for every credential of it, other organizations untouched', async () => {
    const o = await populated('Locked Co');
    const config = await discover(t, o.sa.id, o.sa.clientSecret);
    const accessToken = (await oauth.clientCredentialsGrant(config, { scope: 'members.read' })).access_token;
    // The member also belongs to another organization.
    const other = await createOrganization(t, 'Elsewhere');
    const memberAlsoThere = await t.db.insertInto('members').values({ id: newId('member'), organization_id: other.organizationId, user_id: o.member.userId, role: 'member', created_at: t.clock.now(), updated_at: t.clock.now() } as never).returning('id').executeTakeFirstOrThrow();
    expect(memberAlsoThere.id).toMatch(/^om_/);

    const before = await t.http.get('/v1/members').set('x-api-key', o.apiKey);
    expect(before.status).toBe(200);

    const res = await deleteOrg(await freshSession(o.owner), 'Locked Co');
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ ok: true, item: { status: 'deletion_scheduled', purgeAt: new Date(t.clock.now().getTime() + 7 * DAY).toISOString() } });

    for (const token of [o.owner.token, o.member.token]) {
      for (const [method, path] of [['get', '/v1/org'], ['get', '/v1/members'], ['get', '/v1/teams'], ['post', '/v1/teams']] as const) {
        const r = await t.http[method](path).set(...bearer(token)).send(method === 'post' ? { name: 'x' } : undefined);
        expect([path, r.status, r.body.reason]).toEqual([path, 403, 'organization_deleted']);
      }
    }
    // A member's restore is not theirs to make.
    const byMember = await t.http.post('/v1/org/restore').set(...bearer(o.member.token));
    expect([byMember.status, byMember.body.reason]).toEqual([403, 'organization_deleted']);
    // Every credential of the organization: 401.
    expect((await t.http.get('/v1/members').set('x-api-key', o.apiKey)).status).toBe(401);
    expect((await scimClient(t, o.scimToken).get('/Users')).status).toBe(401);
    expect((await t.http.post(`/v1/workers/${o.worker.id}/heartbeat`).set(...bearer(o.worker.hostToken)).send({})).status).toBe(401);
    expect((await t.http.get('/v1/members').set(...bearer(accessToken))).status).toBe(401);
    const token = await t.http.post('/oauth/token').auth(o.sa.id, o.sa.clientSecret).type('form').send({ grant_type: 'client_credentials' });
    expect(token.status).toBe(401);
    // The account and its other organization are untouched.
    expect((await t.http.get('/v1/me').set(...bearer(o.member.token))).status).toBe(200);
    const switched = await t.http.post('/v1/me/active-organization').set(...bearer(o.member.token)).send({ organizationId: other.organizationId });
    expect(switched.status).toBe(200);
    expect((await t.http.get('/v1/org').set(...bearer(o.member.token))).status).toBe(200);
    expect((await t.http.get('/v1/org').set(...bearer(other.token))).status).toBe(200);
    // A second request is refused.
    const again = await deleteOrg(await freshSession(o.owner), 'Locked Co');
    expect(again.status).toBe(403);
  });

  it('sends webhooks up to its own event and none of the locked time; a restore resumes them', async () => {
    const o = await populated('Hooked Co');
    const deliveries = async () =>
      (await t.db.selectFrom('webhook_deliveries').select('event_type').where('endpoint_id', '=', o.webhookId).orderBy('created_at').orderBy('id').execute()).map((d) => d.event_type);
    const ownerToken = await freshSession(o.owner);
    expect((await deleteOrg(ownerToken, 'Hooked Co')).status).toBe(202);
    expect((await deliveries()).at(-1)).toBe('organization.deletion_scheduled');
    const countAtLock = (await deliveries()).length;
    // A platform admin's change during the lock is audited in its log, and not sent.
    const admin = await createOrganization(t, 'Platform');
    await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', admin.userId).execute();
    const eventsBefore = await t.db.selectFrom('events').select('id').where('organization_id', '=', o.owner.organizationId).execute();
    const plan = await t.http.patch(`/v1/admin/organizations/${o.owner.organizationId}`).set(...bearer(admin.token)).send({ plan: 'team' });
    expect(plan.status).toBe(200);
    const eventsAfter = await t.db.selectFrom('events').select('id').where('organization_id', '=', o.owner.organizationId).execute();
    expect(eventsAfter.length).toBeGreaterThan(eventsBefore.length);
    expect(await deliveries()).toHaveLength(countAtLock);
    // Back to the plan SCIM needs (still locked: not sent either).
    expect((await t.http.patch(`/v1/admin/organizations/${o.owner.organizationId}`).set(...bearer(admin.token)).send({ plan: 'enterprise' })).status).toBe(200);
    expect(await deliveries()).toHaveLength(countAtLock);

    const restored = await t.http.post('/v1/org/restore').set(...bearer(ownerToken));
    expect(restored.status).toBe(200);
    expect(restored.body.item).toMatchObject({ id: o.owner.organizationId, name: 'Hooked Co' });
    expect(await deliveries()).toEqual(expect.arrayContaining(['organization.restored']));
    expect((await deliveries()).filter((type) => type === 'organization.updated')).toEqual([]);
    // Everything works again: the member, the API key, the endpoint's next events.
    expect((await t.http.get('/v1/members').set(...bearer(o.member.token))).status).toBe(200);
    expect((await t.http.get('/v1/members').set('x-api-key', o.apiKey)).status).toBe(200);
    expect((await scimClient(t, o.scimToken).get('/Users')).status).toBe(200);
    expect((await t.http.patch('/v1/org').set(...bearer(o.owner.token)).send({ name: 'Hooked Again' })).status).toBe(200);
    expect((await deliveries()).at(-1)).toBe('organization.updated');
    const notDeleted = await t.http.post('/v1/org/restore').set(...bearer(ownerToken));
    expect([notDeleted.status, notDeleted.body.error]).toEqual([409, 'organization_not_deleted']);
  });

  it('mails every member once, however often the job runs', async () => {
    const owner = await createOrganization(t, 'Mailed Co');
    const members = [];
    for (let i = 0; i < 4; i++) members.push(await addMember(t, owner.organizationId));
    expect((await deleteOrg(await freshSession(owner), 'Mailed Co')).status).toBe(202);
    await runLifecycle();
    await runLifecycle();
    const sent = await t.db.selectFrom('mail_messages').select(['recipient', 'subject']).where('subject', 'like', 'Mailed Co is scheduled for deletion%').execute();
    expect(sent.map((m) => m.recipient).sort()).toEqual([owner.email, ...members.map((m) => m.email)].sort());
  });

  it('refuses a restore once the grace period is over (409 organization_purging)', async () => {
    const owner = await createOrganization(t, 'Late Co');
    clock().advance(0);
    expect((await deleteOrg(owner.token, 'Late Co')).status).toBe(202);
    clock().advance(7 * DAY + 1000);
    const late = await t.http.post('/v1/org/restore').set(...bearer(await freshSession(owner)));
    expect([late.status, late.body.error]).toEqual([409, 'organization_purging']);
  });
});

describe('the purge', () => {
  let kept: OrgOwner;
  beforeAll(async () => {
    kept = (await populated('Kept Co')).owner;
  });

  it('removes every row of the organization in every table, keeps the users\' accounts and a tombstone, and touches no other organization', async () => {
    const o = await populated('Purged Co');
    const keptBefore = await rowsOfOrganization(t, kept.organizationId);
    const ownerToken = await freshSession(o.owner);
    expect((await deleteOrg(ownerToken, 'Purged Co')).status).toBe(202);
    const deletedAt = t.clock.now();
    await runLifecycle();
    // Not yet due: everything is still there.
    expect((await rowsOfOrganization(t, o.owner.organizationId)).members).toBeGreaterThan(0);

    clock().advance(7 * DAY + 1000);
    await runLifecycle();

    expect(leftOf(await rowsOfOrganization(t, o.owner.organizationId))).toEqual([]);
    expect(await t.db.selectFrom('sso_saml_assertions').select('assertion_id').where('connection_id', '=', o.connectionId).execute()).toEqual([]);
    expect(await t.db.selectFrom('sessions').select('id').where('active_organization_id', '=', o.owner.organizationId).execute()).toEqual([]);
    expect(await t.db.selectFrom('users').select('id').where('provisioned_by_organization_id', '=', o.owner.organizationId).execute()).toEqual([]);
    expect(await rowsOfOrganization(t, kept.organizationId)).toEqual(keptBefore);
    const tombstone = await t.db.selectFrom('organization_tombstones').selectAll().where('organization_id', '=', o.owner.organizationId).executeTakeFirstOrThrow();
    expect(tombstone).toEqual({
      organization_id: o.owner.organizationId,
      name_sha256: createHash('sha256').update('Purged Co').digest('hex'),
      deleted_at: deletedAt,
      deleted_by_user_id: o.owner.userId,
      purged_at: expect.any(Date),
    });
    // The users keep their accounts: they sign in, have no organization, and can make another.
    const me = await t.http.get('/v1/me').set(...bearer(o.member.token));
    expect(me.status).toBe(200);
    const noOrg = await t.http.get('/v1/org').set(...bearer(ownerToken));
    expect(noOrg.status).not.toBe(200);
    const again = await t.http.post('/v1/org').set(...bearer(ownerToken)).send({ name: 'Second Life' });
    expect(again.status).toBe(201);
    expect((await t.http.get('/v1/org').set(...bearer(kept.token))).status).toBe(200);
  });

  it('resumes after a process dies half-way: another run finishes once the lease expires', async () => {
    const o = await populated('Crashed Co');
    expect((await deleteOrg(await freshSession(o.owner), 'Crashed Co')).status).toBe(202);
    await runLifecycle();
    clock().advance(7 * DAY + 1000);
    // A process claims the purge, removes some batches, and dies (its lease stays).
    const [job] = await lifecycleStore.claimLifecycleJobs(t.db, { now: t.clock.now(), leaseUntil: new Date(t.clock.now().getTime() + 60_000), token: 'dead-process', batch: 10 });
    expect(job?.id).toBe(o.owner.organizationId);
    // It went in the registry's order: the first steps done, the audit log's half-way.
    const auditLogs = PURGE_STEPS.findIndex((step) => step.table === 'audit_logs');
    for (const step of PURGE_STEPS.slice(0, auditLogs)) while ((await lifecycleStore.purgeBatch(t.db, step, o.owner.organizationId, 2)) === 2);
    expect(await lifecycleStore.purgeBatch(t.db, PURGE_STEPS[auditLogs]!, o.owner.organizationId, 2)).toBe(2);
    // While its lease holds, nobody else takes the work.
    await runLifecycle();
    expect((await rowsOfOrganization(t, o.owner.organizationId)).organizations).toBe(1);
    // A restore is refused once the purge began.
    const late = await t.http.post('/v1/org/restore').set(...bearer(await freshSession(o.owner)));
    expect(late.status).toBe(409);
    clock().advance(61_000);
    await runLifecycle();
    expect(leftOf(await rowsOfOrganization(t, o.owner.organizationId))).toEqual([]);
    expect(await t.db.selectFrom('organization_tombstones').select('organization_id').where('organization_id', '=', o.owner.organizationId).execute()).toHaveLength(1);
  });

  it('stops at the next batch when the organization is restored meanwhile (the lease is gone)', async () => {
    const owner = await createOrganization(t, 'Changed Mind');
    expect((await deleteOrg(owner.token, 'Changed Mind')).status).toBe(202);
    const kind = new OrganizationLifecycle({ db: t.db, clock: t.clock, logger: pino({ level: 'silent' }), secrets: new SecretBox(t.settings.secretKey!), settings: t.settings });
    const [job] = await kind.claim({ now: t.clock.now(), leaseUntil: new Date(t.clock.now().getTime() + 60_000), token: 'tok', batch: 1 });
    expect(job?.id).toBe(owner.organizationId);
    expect((await t.http.post('/v1/org/restore').set(...bearer(owner.token))).status).toBe(200);
    await kind.attempt(job!);
    // No notice was queued: the restore took the lease away before the first batch.
    expect(await t.db.selectFrom('mail_messages').select('id').where('subject', 'like', 'Changed Mind is scheduled%').execute()).toEqual([]);
    expect((await t.http.get('/v1/org').set(...bearer(owner.token))).status).toBe(200);
  });
});

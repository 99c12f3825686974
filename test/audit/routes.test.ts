import { sql } from 'kysely';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, type OrgOwner } from '../support/factories';
import type { ManualClock } from '../support/clock';
import { pruneAuditLog } from '../../src/audit/retention';

/**
 * GET /v1/audit-logs (filters, keyset pages, newest first), the NDJSON and CSV export (oldest
 * first, range, plan feature), verification that finds an edited row, and retention pruning.
 */
let t: TestApp;
let owner: OrgOwner;
let teamIds: string[];
beforeAll(async () => {
  t = await createTestApp();
  owner = await createOrganization(t, 'Audit Routes');
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  teamIds = [];
  for (const name of ['Alpha', 'Beta', 'Gamma']) {
    (t.clock as ManualClock).advance(1000);
    const res = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name });
    teamIds.push(res.body.item.id);
  }
  (t.clock as ManualClock).advance(1000);
  await t.http.patch(`/v1/teams/${teamIds[0]}`).set(...bearer(owner.token)).send({ name: 'Alpha 2' });
}, 120_000);
afterAll(() => t.close());

const list = (query: Record<string, string> = {}, token = owner.token) => t.http.get('/v1/audit-logs').query(query).set(...bearer(token));

describe('GET /v1/audit-logs', () => {
  it('lists newest first with actor, target and changes', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body.items.map((e: { action: string }) => e.action)).toEqual(['team.updated', 'team.created', 'team.created', 'team.created', 'organization.created']);
    expect(res.body.items[0]).toMatchObject({
      organizationId: owner.organizationId,
      actor: { type: 'member', id: owner.userId, memberId: owner.memberId },
      target: { type: 'team', id: teamIds[0] },
      changes: { name: { from: 'Alpha', to: 'Alpha 2' } },
    });
  });

  it('filters by exact action, prefix, actor, target and time range', async () => {
    const actions = async (q: Record<string, string>) => (await list(q)).body.items.map((e: { action: string; target: { id: string } }) => `${e.action}:${e.target.id}`);
    expect(await actions({ action: 'team.created' })).toHaveLength(3);
    expect(await actions({ action: 'team.*' })).toHaveLength(4);
    expect(await actions({ action: 'organization.*' })).toEqual([`organization.created:${owner.organizationId}`]);
    expect(await actions({ action: 'tea.*' })).toEqual([]);
    expect(await actions({ targetId: teamIds[1]! })).toEqual([`team.created:${teamIds[1]}`]);
    expect(await actions({ actorMemberId: owner.memberId })).toHaveLength(5);
    const all = (await list()).body.items as { createdAt: string }[];
    // Beta was created at all[2].createdAt: from is inclusive, to exclusive.
    expect(await actions({ from: all[2]!.createdAt, to: all[1]!.createdAt })).toEqual([`team.created:${teamIds[1]}`]);
  });

  it('pages with an opaque cursor', async () => {
    const first = await list({ limit: '2' });
    expect(first.body.items).toHaveLength(2);
    const second = await list({ limit: '2', cursor: first.body.nextCursor });
    const third = await list({ limit: '2', cursor: second.body.nextCursor });
    expect(third.body.nextCursor).toBeNull();
    const ids = [...first.body.items, ...second.body.items, ...third.body.items].map((e: { id: string }) => e.id);
    expect(ids).toEqual((await list()).body.items.map((e: { id: string }) => e.id));
  });

  it('refuses a plain member and bad filters, and shows no other organization', async () => {
    const member = await addMember(t, owner.organizationId, 'member');
    expect((await list({}, member.token)).body).toMatchObject({ error: 'forbidden', reason: 'org_admin_required' });
    expect((await list({ action: 'DROP TABLE' })).body.details[0].path).toEqual(['query', 'action']);
    expect((await list({ from: 'yesterday' })).body.details[0].path).toEqual(['query', 'from']);
    const other = await createOrganization(t, 'Other');
    const theirs = await list({}, other.token);
    expect(theirs.body.items.map((e: { organizationId: string }) => e.organizationId)).toEqual([other.organizationId]);
  });
});

describe('GET /v1/audit-logs/export', () => {
  it('streams NDJSON oldest first, the same entries the list shows', async () => {
    const res = await t.http.get('/v1/audit-logs/export').set(...bearer(owner.token)).buffer(true).parse((r, done) => {
      let text = '';
      r.on('data', (c: Buffer) => (text += c.toString()));
      r.on('end', () => done(null, text));
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const lines = (res.body as string).trim().split('\n').map((l) => JSON.parse(l));
    const listed = (await list()).body.items;
    expect(lines.slice(0, listed.length)).toEqual([...listed].reverse());
  });

  it('writes CSV with a header row and nested fields as JSON, within the range', async () => {
    const listed = (await list({ action: 'team.created' })).body.items as { id: string; createdAt: string }[];
    const res = await t.http
      .get('/v1/audit-logs/export')
      .query({ format: 'csv', from: listed[2]!.createdAt, to: listed[0]!.createdAt })
      .set(...bearer(owner.token))
      .buffer(true)
      .parse((r, done) => {
        let text = '';
        r.on('data', (c: Buffer) => (text += c.toString()));
        r.on('end', () => done(null, text));
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const rows = (res.body as string).trimEnd().split('\r\n');
    expect(rows[0]).toBe('id,organizationId,action,actor,target,changes,requestId,ip,userAgent,createdAt');
    expect(rows.slice(1).map((r) => r.split(',')[0])).toEqual([listed[2]!.id, listed[1]!.id]);
    expect(rows[1]).toContain(`"{""type"":""team"",""id"":""${teamIds[0]}""}"`);
  });

  it('needs the auditLog plan feature', async () => {
    const free = await createOrganization(t, 'Free');
    const res = await t.http.get('/v1/audit-logs/export').set(...bearer(free.token));
    expect(res.status).toBe(402);
    expect(res.body).toMatchObject({ error: 'enterprise_plan_required', feature: 'auditLog' });
  });
});

describe('GET /v1/audit-logs/verify', () => {
  it('finds the entry edited in the database, and refuses edits through SQL while the trigger stands', async () => {
    const org = await createOrganization(t, 'Tamper');
    for (const name of ['One', 'Two', 'Three']) await t.http.post('/v1/teams').set(...bearer(org.token)).send({ name });
    const ok = await t.http.get('/v1/audit-logs/verify').set(...bearer(org.token));
    expect(ok.body).toEqual({ ok: true, checked: 4, firstBrokenId: null });

    const victim = (await t.http.get('/v1/audit-logs').query({ targetId: '' + (await t.http.get('/v1/teams').set(...bearer(org.token))).body.items[1].id }).set(...bearer(org.token))).body.items[0];
    await expect(sql`UPDATE audit_logs SET action = 'team.deleted' WHERE id = ${victim.id}`.execute(t.db)).rejects.toThrow(/append-only/);
    await sql`ALTER TABLE audit_logs DISABLE TRIGGER audit_logs_append_only`.execute(t.db);
    try {
      await sql`UPDATE audit_logs SET changes = '{"name": {"from": null, "to": "Forged"}}' WHERE id = ${victim.id}`.execute(t.db);
    } finally {
      await sql`ALTER TABLE audit_logs ENABLE TRIGGER audit_logs_append_only`.execute(t.db);
    }
    const broken = await t.http.get('/v1/audit-logs/verify').set(...bearer(org.token));
    expect(broken.body).toEqual({ ok: false, checked: 4, firstBrokenId: victim.id });
  });

  it('notices the newest entries deleted by hand', async () => {
    const org = await createOrganization(t, 'Truncated');
    await t.http.post('/v1/teams').set(...bearer(org.token)).send({ name: 'Last' });
    await sql`DELETE FROM audit_logs WHERE organization_id = ${org.organizationId} AND action = 'team.created'`.execute(t.db);
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(org.token))).body).toEqual({ ok: false, checked: 1, firstBrokenId: null });
  });
});

describe('retention', () => {
  it('prunes entries older than the retention by the injected clock; the kept chain still verifies', async () => {
    const clock = t.clock as ManualClock;
    const org = await createOrganization(t, 'Retained');
    // Sessions last 30 days: sign in again after each jump (a sign-in is itself an entry).
    const signIn = async () => (await t.http.post('/v1/auth/sign-in').send({ email: org.email, password: PASSWORD })).body.session.token as string;
    await t.http.post('/v1/teams').set(...bearer(org.token)).send({ name: 'Old' });
    clock.advance(300 * 86_400_000);
    await t.http.post('/v1/teams').set(...bearer(await signIn())).send({ name: 'Recent' });
    clock.advance(100 * 86_400_000);
    const token = await signIn();
    await t.http.post('/v1/teams').set(...bearer(token)).send({ name: 'New' });

    // Gone: organization.created and team Old (400 days old). Kept: sign-in, Recent, sign-in, New.
    expect(await pruneAuditLog(t.db, clock, 365)).toBeGreaterThanOrEqual(2);
    const kept = (await t.http.get('/v1/audit-logs').query({ action: 'team.*' }).set(...bearer(token))).body.items.map((e: { changes: { name?: { to: string } } }) => e.changes.name?.to);
    expect(kept).toEqual(['New', 'Recent']);
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(token))).body).toEqual({ ok: true, checked: 4, firstBrokenId: null });

    // Everything aged out: the chain head remains, and an empty log is not "broken".
    clock.advance(400 * 86_400_000);
    await pruneAuditLog(t.db, clock, 365);
    const count = await t.db.selectFrom('audit_logs').select((eb) => eb.fn.countAll<number>().as('n')).where('organization_id', '=', org.organizationId).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
    const again = await signIn();
    // The sign-in just now is the one kept entry; its stored previous hash anchors the chain.
    expect((await t.http.get('/v1/audit-logs/verify').set(...bearer(again))).body).toEqual({ ok: true, checked: 1, firstBrokenId: null });
  });
});

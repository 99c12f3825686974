import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, type OrgMember, type OrgOwner } from '../support/factories';
import type { ManualClock } from '../support/clock';

let t: TestApp;
let clock: ManualClock;
let owner: OrgOwner;
let member: OrgMember;
let other: OrgMember;
beforeAll(async () => {
  t = await createTestApp();
  clock = t.clock as ManualClock;
  owner = await createOrganization(t, 'Templates Inc');
  member = await addMember(t, owner.organizationId, 'member');
  other = await addMember(t, owner.organizationId, 'member');
}, 120_000);
afterAll(() => t.close());

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const LIMIT = 256 * 1024;

async function create(token: string, body: Record<string, unknown> = {}) {
  const res = await t.http
    .post('/v1/templates')
    .set(...bearer(token))
    .send({ name: 'Worker setup', kind: 'worker', content: { image: 'node:20', env: { A: '1' } }, ...body });
  expect(res.status).toBe(201);
  return res;
}

async function count(organizationId: string): Promise<number> {
  const row = await t.db.selectFrom('templates').select((eb) => eb.fn.countAll<string>().as('n')).where('organization_id', '=', organizationId).executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('create and read', () => {
  it('creates at version 1 with an ETag, reads it with content, lists it without', async () => {
    const res = await create(member.token, { description: 'for CI workers' });
    expect(res.headers.etag).toBe('"1"');
    expect(res.body.item).toEqual({
      id: expect.stringMatching(/^tpl_[0-7][0-9a-z]{25}$/),
      name: 'Worker setup',
      description: 'for CI workers',
      kind: 'worker',
      content: { image: 'node:20', env: { A: '1' } },
      version: 1,
      createdByOrgMembershipId: member.memberId,
      createdAt: ISO,
      updatedAt: ISO,
    });
    const got = await t.http.get(`/v1/templates/${res.body.item.id}`).set(...bearer(other.token));
    expect(got.status).toBe(200);
    expect(got.headers.etag).toBe('"1"');
    expect(got.body.item).toEqual(res.body.item);
    const list = await t.http.get('/v1/templates').set(...bearer(other.token));
    const listed = list.body.items.find((i: { id: string }) => i.id === res.body.item.id);
    const { content: _content, ...summary } = res.body.item;
    expect(listed).toEqual(summary);
  });

  it('filters by kind and name, and pages with a cursor', async () => {
    const org = await createOrganization(t, 'Filters');
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      await create(org.token, { name: `Alpha ${i}`, kind: i % 2 === 0 ? 'workspace.setup' : 'worker' });
    }
    await create(org.token, { name: 'Beta', kind: 'worker' });
    const kind = await t.http.get('/v1/templates').query({ kind: 'workspace.setup' }).set(...bearer(org.token));
    expect(kind.body.items.map((i: { name: string }) => i.name)).toEqual(['Alpha 4', 'Alpha 2', 'Alpha 0']);
    const q = await t.http.get('/v1/templates').query({ q: 'BET' }).set(...bearer(org.token));
    expect(q.body.items.map((i: { name: string }) => i.name)).toEqual(['Beta']);
    const first = await t.http.get('/v1/templates').query({ limit: 4 }).set(...bearer(org.token));
    expect(first.body.items).toHaveLength(4);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await t.http.get('/v1/templates').query({ limit: 4, cursor: first.body.nextCursor }).set(...bearer(org.token));
    expect(second.body.items.map((i: { name: string }) => i.name)).toEqual(['Alpha 1', 'Alpha 0']);
    expect(second.body.nextCursor).toBeNull();
  });

  it('accepts content of exactly 256 KiB and refuses one byte more with 413, writing nothing', async () => {
    const org = await createOrganization(t, 'Big');
    // {"a":"xxx…"} is the string's length plus 8 bytes of JSON.
    const exact = { a: 'x'.repeat(LIMIT - 8) };
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(LIMIT);
    await create(org.token, { content: exact });
    const over = await t.http.post('/v1/templates').set(...bearer(org.token)).send({ name: 'too big', kind: 'worker', content: { a: 'x'.repeat(LIMIT - 7) } });
    expect(over.status).toBe(413);
    expect(over.body).toEqual({ error: 'payload_too_large', message: expect.stringContaining(String(LIMIT)) });
    expect(await count(org.organizationId)).toBe(1);
  });

  it('refuses bad input with 400 naming the field, writing nothing', async () => {
    const org = await createOrganization(t, 'Bad input');
    const cases: [Record<string, unknown>, string[]][] = [
      [{ name: 'x', kind: 'Not A Kind', content: {} }, ['body', 'kind']],
      [{ name: 'x', kind: 'worker', content: [1, 2] }, ['body', 'content']],
      [{ name: '', kind: 'worker', content: {} }, ['body', 'name']],
      [{ name: 'x', kind: 'worker' }, ['body', 'content']],
      [{ name: 'x', kind: 'worker', content: {}, version: 3 }, ['body', 'version']],
      [{ name: 'x', kind: 'worker', content: {}, description: 'd'.repeat(2001) }, ['body', 'description']],
    ];
    for (const [body, path] of cases) {
      const res = await t.http.post('/v1/templates').set(...bearer(org.token)).send(body);
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_request' });
      expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(path);
    }
    expect(await count(org.organizationId)).toBe(0);
  });
});

describe('update, versions and If-Match', () => {
  it('grows the version only when something changes', async () => {
    const { body } = await create(member.token);
    const id = body.item.id;
    const same = await t.http.patch(`/v1/templates/${id}`).set(...bearer(member.token)).send({ name: 'Worker setup', content: { env: { A: '1' }, image: 'node:20' } });
    expect(same.status).toBe(200);
    expect(same.body.item.version).toBe(1);
    expect(same.headers.etag).toBe('"1"');
    clock.advance(5000);
    const changed = await t.http.patch(`/v1/templates/${id}`).set(...bearer(member.token)).send({ content: { image: 'node:22' } });
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).toBe('"2"');
    expect(changed.body.item).toMatchObject({ version: 2, content: { image: 'node:22' }, name: 'Worker setup' });
    expect(new Date(changed.body.item.updatedAt).getTime()).toBeGreaterThan(new Date(body.item.updatedAt).getTime());
  });

  it('applies an If-Match of the current version and refuses a stale one with 412, changing nothing', async () => {
    const { body } = await create(member.token);
    const id = body.item.id;
    const ok = await t.http.patch(`/v1/templates/${id}`).set(...bearer(member.token)).set('if-match', '"1"').send({ name: 'v2' });
    expect(ok.status).toBe(200);
    expect(ok.body.item.version).toBe(2);
    const stale = await t.http.patch(`/v1/templates/${id}`).set(...bearer(member.token)).set('if-match', '"1"').send({ name: 'lost update' });
    expect(stale.status).toBe(412);
    expect(stale.body).toEqual({ error: 'version_mismatch', message: expect.any(String), version: 2 });
    const now = await t.http.get(`/v1/templates/${id}`).set(...bearer(member.token));
    expect(now.body.item).toMatchObject({ name: 'v2', version: 2 });
    const weak = await t.http.patch(`/v1/templates/${id}`).set(...bearer(member.token)).set('if-match', 'W/"2"').send({ name: 'v3' });
    expect(weak.status).toBe(200);
    const any = await t.http.patch(`/v1/templates/${id}`).set(...bearer(member.token)).set('if-match', '*').send({ name: 'v4' });
    expect(any.body.item.version).toBe(4);
    const bad = await t.http.patch(`/v1/templates/${id}`).set(...bearer(member.token)).set('if-match', '"abc"').send({ name: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].path).toEqual(['header', 'If-Match']);
  });

  it('lets exactly one of several concurrent PATCHes with the same If-Match win', async () => {
    for (let round = 0; round < 3; round++) {
      const { body } = await create(member.token);
      const id = body.item.id;
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => t.http.patch(`/v1/templates/${id}`).set(...bearer(member.token)).set('if-match', '"1"').send({ content: { writer: i } })),
      );
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 412, 412, 412, 412, 412]);
      const winner = answers.find((r) => r.status === 200)!;
      const stored = await t.http.get(`/v1/templates/${id}`).set(...bearer(member.token));
      expect(stored.body.item).toEqual(winner.body.item);
      expect(stored.body.item.version).toBe(2);
    }
  });

  it('lets the creator and admins edit and delete; anyone else gets 403 permission_required', async () => {
    const { body } = await create(member.token);
    const id = body.item.id;
    const denied = await t.http.patch(`/v1/templates/${id}`).set(...bearer(other.token)).send({ name: 'mine now' });
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: 'forbidden', reason: 'permission_required', message: expect.any(String) });
    const deniedDelete = await t.http.delete(`/v1/templates/${id}`).set(...bearer(other.token));
    expect(deniedDelete.status).toBe(403);
    expect(deniedDelete.body.reason).toBe('permission_required');
    const byOwner = await t.http.patch(`/v1/templates/${id}`).set(...bearer(owner.token)).send({ description: 'reviewed' });
    expect(byOwner.status).toBe(200);
    const staleDelete = await t.http.delete(`/v1/templates/${id}`).set(...bearer(member.token)).set('if-match', '"1"');
    expect(staleDelete.status).toBe(412);
    const del = await t.http.delete(`/v1/templates/${id}`).set(...bearer(member.token)).set('if-match', '"2"');
    expect(del.status).toBe(204);
    expect((await t.http.get(`/v1/templates/${id}`).set(...bearer(member.token))).status).toBe(404);
    expect((await t.http.delete(`/v1/templates/${id}`).set(...bearer(member.token))).status).toBe(404);
  });

  it('refuses oversized content on PATCH with 413 and keeps the template', async () => {
    const { body } = await create(member.token);
    const res = await t.http.patch(`/v1/templates/${body.item.id}`).set(...bearer(member.token)).send({ content: { a: 'x'.repeat(LIMIT) } });
    expect(res.status).toBe(413);
    const now = await t.http.get(`/v1/templates/${body.item.id}`).set(...bearer(member.token));
    expect(now.body.item).toEqual(body.item);
  });
});

describe('audit', () => {
  it('writes one entry per change and none for a PATCH that changes nothing', async () => {
    const org = await createOrganization(t, 'Audited');
    const { body } = await create(org.token);
    const id = body.item.id;
    await t.http.patch(`/v1/templates/${id}`).set(...bearer(org.token)).send({ name: 'Worker setup' });
    await t.http.patch(`/v1/templates/${id}`).set(...bearer(org.token)).send({ name: 'Renamed', content: { image: 'node:22' } });
    await t.http.delete(`/v1/templates/${id}`).set(...bearer(org.token));
    const rows = await t.db.selectFrom('audit_logs').select(['action', 'target_id', 'changes']).where('organization_id', '=', org.organizationId).where('action', 'like', 'template.%').orderBy('created_at').orderBy('id').execute();
    expect(rows.map((r) => r.action)).toEqual(['template.created', 'template.updated', 'template.deleted']);
    expect(rows.every((r) => r.target_id === id)).toBe(true);
    expect(rows[1]!.changes).toMatchObject({ name: { from: 'Worker setup', to: 'Renamed' }, version: { from: 1, to: 2 }, contentBytes: expect.any(Object) });
  });
});

describe('tenant isolation', () => {
  it('answers 404 to another organization on every id and lists none of them', async () => {
    const { body } = await create(member.token);
    const id = body.item.id;
    const stranger = await createOrganization(t, 'Elsewhere');
    for (const res of [
      await t.http.get(`/v1/templates/${id}`).set(...bearer(stranger.token)),
      await t.http.patch(`/v1/templates/${id}`).set(...bearer(stranger.token)).send({ name: 'x' }),
      await t.http.patch(`/v1/templates/${id}`).set(...bearer(stranger.token)).set('if-match', '"1"').send({ name: 'x' }),
      await t.http.delete(`/v1/templates/${id}`).set(...bearer(stranger.token)),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('template_not_found');
    }
    const list = await t.http.get('/v1/templates').set(...bearer(stranger.token));
    expect(list.body.items).toEqual([]);
    const still = await t.http.get(`/v1/templates/${id}`).set(...bearer(member.token));
    expect(still.body.item).toEqual(body.item);
  });
});

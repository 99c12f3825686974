import { sql } from 'kysely';
import type { ManualClock } from '../support/clock';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, signUp } from '../support/factories';
import { verifyDomain, uniqueDomain } from '../support/sso-signin';
import { PATCH_OP, scimClient, scimError, scimOrganization, type ScimOrg } from '../support/scim';
import { pageQuery } from '../../src/scim/directory-store';
import { FilterCompiler, parseFilter } from '../../src/scim/filter';

/**
 * Directory users (docs/scim.md#directory-users-and-linking): every valid User is accepted, linking is a
 * separate step with an explained outcome, renames never fail, and pages cost the same at any depth.
 */
let t: TestApp;
let org: ScimOrg;
let scim: ReturnType<typeof scimClient>;
beforeAll(async () => {
  t = await createTestApp();
  org = await scimOrganization(t, 'Directory');
  scim = scimClient(t, org.token);
}, 300_000);
afterAll(() => t.close());

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
async function provision(body: Record<string, unknown>) {
  const res = await scim.post('/Users', { schemas: [USER], ...body });
  if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; userName: string };
}
async function directoryUser(id: string) {
  for (let cursor: string | undefined; ; ) {
    const res = await t.http.get('/v1/scim/users').set(...bearer(org.owner.token)).query(cursor ? { limit: 100, cursor } : { limit: 100 });
    expect(res.status).toBe(200);
    const found = res.body.items.find((u: { id: string }) => u.id === id);
    if (found) return found as { linkState: string; linkReason: string | null; memberId: string | null; email: string | null };
    if (!res.body.nextCursor) throw new Error(`${id} not listed`);
    cursor = res.body.nextCursor;
  }
}
const accountEmail = async (memberId: string) =>
  (await t.db.selectFrom('members as m').innerJoin('users as u', 'u.id', 'm.user_id').select('u.email').where('m.id', '=', memberId).executeTakeFirstOrThrow()).email;

describe('linking', () => {
  it('accepts any userName; one without an address stays unlinked until an address arrives', async () => {
    const ryan = await provision({ userName: 'ryan3', name: { givenName: 'Ryan' } });
    expect(ryan.id).toMatch(/^dus_/);
    expect(await directoryUser(ryan.id)).toMatchObject({ linkState: 'unlinked', linkReason: 'no_valid_email', memberId: null, email: null });
    await scim.patch(`/Users/${ryan.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'emails', value: [{ value: 'ryan3@directory.example', type: 'work' }] }] });
    const linked = await directoryUser(ryan.id);
    expect(linked).toMatchObject({ linkState: 'linked', linkReason: null, email: 'ryan3@directory.example' });
    const members = await t.http.get('/v1/members').set(...bearer(org.owner.token));
    expect(members.body.items.find((m: { id: string }) => m.id === linked.memberId)).toMatchObject({ directoryUserId: ryan.id, role: 'member', user: { email: 'ryan3@directory.example' } });
  });

  it('chooses the sign-in e-mail: primary, then work, then the others in order, then userName', async () => {
    const cases: [Record<string, unknown>, string | null][] = [
      [{ userName: 'pick-1', emails: [{ value: 'home1@pick.example', type: 'home' }, { value: 'work1@pick.example', type: 'work' }, { value: 'prim1@pick.example', primary: 'True' }] }, 'prim1@pick.example'],
      [{ userName: 'pick-2', emails: [{ value: 'home2@pick.example', type: 'home' }, { value: 'work2@pick.example', type: 'Work' }] }, 'work2@pick.example'],
      [{ userName: 'pick-3', emails: [{ value: 'not-an-address', primary: true }, { value: 'other3@pick.example', type: 'other' }] }, 'other3@pick.example'],
      [{ userName: 'user4@pick.example', emails: [{ value: 'emailName357', type: 'work' }] }, 'user4@pick.example'],
      [{ userName: 'pick-5', emails: [{ value: 'emailName357', type: 'work' }] }, null],
    ];
    for (const [body, email] of cases) expect((await directoryUser((await provision(body)).id)).email).toBe(email);
  });

  it('provisions two directory users with one e-mail: one links, the other says with whom, and links once the first goes', async () => {
    const emails = [{ value: 'anna33@shared.example', type: 'work', primary: true }];
    const first = await provision({ userName: 'emp1', emails });
    const second = await provision({ userName: 'emp2', emails });
    const third = await provision({ userName: 'anna-admin', emails });
    expect(await directoryUser(first.id)).toMatchObject({ linkState: 'linked' });
    expect(await directoryUser(second.id)).toMatchObject({ linkState: 'unlinked', linkReason: 'email_shared_with', memberId: null });
    const unlinked = await t.http.get('/v1/scim/users').set(...bearer(org.owner.token)).query({ linkState: 'unlinked', limit: 100 });
    expect(unlinked.body.items.map((u: { id: string }) => u.id)).toEqual(expect.arrayContaining([second.id, third.id]));
    expect(unlinked.body.items.map((u: { id: string }) => u.id)).not.toContain(first.id);
    // Both stay Users of their own, suspended and restored like any.
    expect((await scim.patch(`/Users/${second.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] })).body.active).toBe(false);
    // The first goes: the oldest sharer links in the same request.
    expect((await scim.delete(`/Users/${first.id}`)).status).toBe(204);
    expect(await directoryUser(second.id)).toMatchObject({ linkState: 'linked', linkReason: null });
    expect(await directoryUser(third.id)).toMatchObject({ linkState: 'unlinked', linkReason: 'email_shared_with' });
  });

  it("links an account in a verified domain (adopting its membership) but never another organization's account elsewhere", async () => {
    const outsider = await signUp(t, 'outsider');
    const kept = await provision({ userName: outsider.email });
    expect(await directoryUser(kept.id)).toMatchObject({ linkState: 'unlinked', linkReason: 'email_belongs_to_other_account', email: outsider.email });
    expect(await t.db.selectFrom('members').select('id').where('user_id', '=', outsider.userId).execute()).toEqual([]);

    const domain = uniqueDomain();
    await verifyDomain(t, org.owner.organizationId, domain);
    const insider = await t.http.post('/v1/auth/sign-up').send({ email: `insider@${domain}`, password: 'correct horse battery staple', name: 'Insider' });
    expect(insider.status).toBe(201);
    const linked = await provision({ userName: `INSIDER@${domain.toUpperCase()}` });
    expect(await directoryUser(linked.id)).toMatchObject({ linkState: 'linked' });
  });
});

describe('renames', () => {
  it("never fail; the organization's own account follows, another organization's member keeps its address", async () => {
    const own = await provision({ userName: 'rename.me@own.example' });
    const ownMember = (await directoryUser(own.id)).memberId!;
    const renamed = await scim.patch(`/Users/${own.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'userName', value: 'renamed@own.example' }] });
    expect({ status: renamed.status, userName: renamed.body.userName }).toEqual({ status: 200, userName: 'renamed@own.example' });
    expect(await accountEmail(ownMember)).toBe('renamed@own.example');

    // The same account is also a member elsewhere: it keeps its address, the User its link.
    const shared = await provision({ userName: 'shared.person@own.example' });
    const sharedMember = (await directoryUser(shared.id)).memberId!;
    const elsewhere = await createOrganization(t, 'Elsewhere');
    const userId = (await t.db.selectFrom('members').select('user_id').where('id', '=', sharedMember).executeTakeFirstOrThrow()).user_id!;
    await t.db.insertInto('members').values({ id: `om_${'x'.repeat(26)}`, organization_id: elsewhere.organizationId, user_id: userId, role: 'member', created_at: t.clock.now(), removed_at: null }).execute();
    const put = await scim.put(`/Users/${shared.id}`, { schemas: [USER], userName: 'emp-0042', emails: [{ value: 'moved@own.example', type: 'work' }] });
    expect({ status: put.status, userName: put.body.userName }).toEqual({ status: 200, userName: 'emp-0042' });
    expect(await accountEmail(sharedMember)).toBe('shared.person@own.example');
    expect(await directoryUser(shared.id)).toMatchObject({ linkState: 'linked', memberId: sharedMember, email: 'moved@own.example' });

    // userName stays unique ignoring case: 409 uniqueness, nothing changes.
    scimError(await scim.patch(`/Users/${shared.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'userName', value: 'RENAMED@own.example' }] }), 409, 'uniqueness');
    expect((await scim.get(`/Users/${shared.id}`)).body.userName).toBe('emp-0042');
  });
});

describe('filters', () => {
  let ids: Record<string, string>;
  beforeAll(async () => {
    ids = {};
    for (const [userName, family, active] of [['f-alpha', 'Able', true], ['f-bravo', 'Baker', false], ['f-charlie', 'Cole', true], ['f-delta', 'Dunn', true]] as const) {
      ids[userName] = (await provision({ userName, active, name: { familyName: family, givenName: userName.toUpperCase() }, emails: [{ value: `${userName}@filters.example`, type: active ? 'work' : 'home' }] })).id;
      (t.clock as ManualClock).advance(1000);
    }
  });
  const names = async (filter: string) => {
    const res = await scim.get('/Users', { filter: `(${filter}) and userName sw "f-"`, count: 100 });
    expect({ status: res.status, body: res.status === 200 ? null : res.body }).toEqual({ status: 200, body: null });
    return res.body.Resources.map((r: { userName: string }) => r.userName);
  };

  it.each([
    ['userName eq "F-ALPHA"', ['f-alpha']],
    ['USERNAME ne "f-alpha"', ['f-bravo', 'f-charlie', 'f-delta']],
    ['userName co "RAV"', ['f-bravo']],
    ['userName sw "F-C"', ['f-charlie']],
    ['userName ew "LTA"', ['f-delta']],
    ['name.familyName pr', ['f-alpha', 'f-bravo', 'f-charlie', 'f-delta']],
    ['title pr', []],
    ['userName gt "f-bravo"', ['f-charlie', 'f-delta']],
    ['userName ge "F-BRAVO"', ['f-bravo', 'f-charlie', 'f-delta']],
    ['name.familyName lt "cole"', ['f-alpha', 'f-bravo']],
    ['name.familyName le "Cole"', ['f-alpha', 'f-bravo', 'f-charlie']],
    ['name.givenName eq "f-delta"', ['f-delta']],
    ['emails.type eq "home"', ['f-bravo']],
    ['emails.value ew "@FILTERS.example" and active eq false', ['f-bravo']],
    ['emails[type eq "work" and value sw "f-a"]', ['f-alpha']],
    ['active eq true and not (userName eq "f-alpha" or userName eq "f-delta")', ['f-charlie']],
    ['not (active eq true)', ['f-bravo']],
    ['(userName eq "f-alpha" or userName eq "f-bravo") and (name.familyName co "b")', ['f-alpha', 'f-bravo']],
    ['displayName pr or externalId pr', []],
    ['name.FamilyName eq Baker', ['f-bravo']],
  ])('%s', async (filter, expected) => {
    expect(await names(filter)).toEqual(expected);
  });

  it('compares meta.created and meta.lastModified as times (gt ge lt le)', async () => {
    const bravo = (await scim.get(`/Users/${ids['f-bravo']}`)).body.meta.created as string;
    expect(await names(`meta.created gt "${bravo}"`)).toEqual(['f-charlie', 'f-delta']);
    expect(await names(`meta.created ge "${bravo}"`)).toEqual(['f-bravo', 'f-charlie', 'f-delta']);
    expect(await names(`meta.created lt "${bravo}"`)).toEqual(['f-alpha']);
    expect(await names(`meta.lastModified le "${bravo}"`)).toEqual(['f-alpha', 'f-bravo']);
  });
});

describe('paging over 10,000 directory users', () => {
  let big: ScimOrg;
  beforeAll(async () => {
    big = await scimOrganization(t, 'Ten thousand');
    // Set-based seeding: one statement, users in creation order a millisecond apart.
    const start = new Date('2026-01-01T00:00:00.000Z');
    await sql`INSERT INTO directory_users (id, organization_id, user_name, user_name_normalized, external_id, active, attributes, email, email_normalized, member_id, link_reason, created_at, updated_at)
      SELECT 'dus_seed' || lpad(i::text, 22, '0'), ${big.owner.organizationId}, 'seed-' || lpad(i::text, 5, '0'), 'seed-' || lpad(i::text, 5, '0'), 'ext-' || i, true,
             jsonb_build_object('name', jsonb_build_object('familyName', 'F' || i)), NULL, NULL, NULL, 'no_valid_email',
             ${start}::timestamptz + i * interval '1 millisecond', ${start}::timestamptz + i * interval '1 millisecond'
      FROM generate_series(1, 10000) AS i`.execute(t.db);
    // Test databases commit without waiting for the disk (test/support/database.ts), and VACUUM
    // cannot mark a page all-visible until its rows' commits are flushed: one commit that waits
    // flushes everything before it.
    await t.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL synchronous_commit = on`.execute(trx);
      await sql`UPDATE directory_users SET updated_at = updated_at WHERE id = 'dus_seed' || lpad('1', 22, '0')`.execute(trx);
    });
    // As autovacuum leaves a table: statistics and the visibility map (index-only scans).
    await sql`VACUUM ANALYZE directory_users`.execute(t.db);
  }, 120_000);

  it('answers any page with the right Users and totalResults', async () => {
    const client = scimClient(t, big.token);
    const first = await client.get('/Users', { startIndex: 1, count: 100 });
    expect(first.body).toMatchObject({ totalResults: 10_000, startIndex: 1, itemsPerPage: 100 });
    expect(first.body.Resources[0].userName).toBe('seed-00001');
    const deep = await client.get('/Users', { startIndex: 9_901, count: 100 });
    expect(deep.body).toMatchObject({ totalResults: 10_000, startIndex: 9_901, itemsPerPage: 100 });
    expect(deep.body.Resources.map((r: { userName: string }) => r.userName)).toEqual(Array.from({ length: 100 }, (_, i) => `seed-${String(9_901 + i).padStart(5, '0')}`));
    // A page that straddles the end, and one past it.
    const tail = await client.get('/Users', { startIndex: 9_951, count: 100 });
    expect(tail.body).toMatchObject({ totalResults: 10_000, startIndex: 9_951, itemsPerPage: 50 });
    expect(tail.body.Resources.map((r: { userName: string }) => r.userName)).toEqual(Array.from({ length: 50 }, (_, i) => `seed-${String(9_951 + i).padStart(5, '0')}`));
    const past = await client.get('/Users', { startIndex: 10_001, count: 100 });
    expect(past.body).toMatchObject({ totalResults: 10_000, itemsPerPage: 0 });
    const one = await client.get('/Users', { filter: 'userName eq "SEED-07777"' });
    expect(one.body.Resources.map((r: { userName: string }) => r.userName)).toEqual(['seed-07777']);
  });

  /** The plan of the page query the service runs, as JSON (`fromEnd`: a page cut from the list's end). */
  async function plan(startIndex: number, filter?: string, fromEnd?: { total: number }) {
    const compiler = new FilterCompiler();
    const where = filter ? compiler.compile(parseFilter(filter), (path) => ({ kind: 'scalar', sql: sql.ref(path[0] === 'userName' ? 'd.user_name_normalized' : 'd.id'), type: 'string', lowered: true })) : null;
    const page = fromEnd
      ? pageQuery(big.owner.organizationId, { where }, Math.max(0, fromEnd.total - (startIndex - 1) - 100), 100, 'desc')
      : pageQuery(big.owner.organizationId, { where }, startIndex - 1, 100);
    const query = page.compile(t.db);
    const res = await t.db.executeQuery<{ 'QUERY PLAN': unknown }>({ ...query, sql: `EXPLAIN (ANALYZE, FORMAT JSON) ${query.sql}` });
    const raw = res.rows[0]!['QUERY PLAN'];
    return (typeof raw === 'string' ? JSON.parse(raw) : raw)[0].Plan as PlanNode;
  }
  interface PlanNode {
    'Node Type': string;
    'Index Name'?: string;
    'Actual Rows': number;
    'Heap Fetches'?: number;
    Plans?: PlanNode[];
  }
  const nodes = (p: PlanNode): PlanNode[] => [p, ...(p.Plans ?? []).flatMap(nodes)];

  it('cuts every page from the (organization, created_at, id) index: no sort, no table read for skipped rows, at any depth', async () => {
    for (const startIndex of [1, 5_001, 9_901]) {
      const p = await plan(startIndex);
      const all = nodes(p);
      expect(all.map((n) => n['Node Type'])).not.toContain('Sort');
      const scan = all.find((n) => n['Index Name'] === 'directory_users_org_order_idx');
      // Skipped rows are index entries, not table rows: fewer table reads than one page holds,
      // at any depth (pages written since the last vacuum are read to check visibility).
      expect(scan?.['Node Type']).toBe('Index Only Scan');
      expect(scan?.['Heap Fetches']).toBeLessThan(100);
      // The page hands on exactly one page of rows, whatever the depth.
      expect(p['Node Type']).toBe('Limit');
      expect(p['Actual Rows']).toBe(100);
    }
    // A page in the list's second half is cut from its end: the last page reads one page of
    // index entries, not the whole list's.
    const last = nodes(await plan(9_901, undefined, { total: 10_000 }));
    expect(last.find((n) => n['Index Name'] === 'directory_users_org_order_idx')?.['Actual Rows']).toBeLessThanOrEqual(100);
    // userName eq is one unique-index probe.
    const byName = nodes(await plan(1, 'userName eq "seed-07777"'));
    expect(byName.find((n) => n['Index Name'] === 'directory_users_org_user_name_key')?.['Actual Rows']).toBe(1);
  });
});

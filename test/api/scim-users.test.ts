import type { ManualClock } from '../support/clock';
import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, signUp } from '../support/factories';
import { verifyDomain } from '../support/sso-signin';
import { ENTERPRISE, PATCH_OP, scimClient, scimError, scimOrganization, type ScimOrg } from '../support/scim';

let t: TestApp;
let org: ScimOrg;
let scim: ReturnType<typeof scimClient>;
beforeAll(async () => {
  t = await createTestApp();
  org = await scimOrganization(t, 'Users');
  scim = scimClient(t, org.token);
}, 300_000);
afterAll(() => t.close());

async function provision(userName: string, extra: Record<string, unknown> = {}) {
  const res = await scim.post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName, ...extra });
  if (res.status !== 201) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; userName: string };
}

const ids = (res: { body: { Resources: { id: string }[] } }) => res.body.Resources.map((r) => r.id);

describe('filters', () => {
  let ann: { id: string };
  let bob: { id: string };
  let cid: { id: string };
  beforeAll(async () => {
    ann = await provision('ann.filter@corp.example', { externalId: 'ext-Ann', displayName: 'Ann Arbor', title: 'Engineer', emails: [{ value: 'ann@home.example', type: 'home' }, { value: 'ann.filter@corp.example', type: 'work', primary: true }], [ENTERPRISE]: { employeeNumber: '1001' } });
    (t.clock as ManualClock).advance(1000);
    bob = await provision('bob.filter@corp.example', { externalId: 'ext-Bob', displayName: 'Bob Builder', title: 'Manager', emails: [{ value: 'bob.filter@corp.example', type: 'work' }], [ENTERPRISE]: { employeeNumber: '1002' } });
    (t.clock as ManualClock).advance(1000);
    cid = await provision('cid.filter@other.example', { externalId: 'ext-Cid', displayName: 'Cid Ctrl', active: false });
  });

  it.each([
    ['userName eq "ANN.FILTER@corp.example"', () => [ann]],
    ['USERNAME Eq "ann.filter@corp.example"', () => [ann]],
    ['userName co "FILTER"', () => [ann, bob, cid]],
    ['userName sw "bob."', () => [bob]],
    ['userName ew "@other.example"', () => [cid]],
    ['userName ne "ann.filter@corp.example" and userName co "filter"', () => [bob, cid]],
    ['externalId eq "ext-Ann"', () => [ann]],
    ['externalId eq "ext-ann"', () => []],
    ['displayName eq "bob builder"', () => [bob]],
    ['emails.value eq "ANN@home.example"', () => [ann]],
    ['emails[type eq "work" and value co "bob.filter"]', () => [bob]],
    ['emails co "home.example"', () => [ann]],
    ['active eq false', () => [cid]],
    ['active eq true and userName co "filter"', () => [ann, bob]],
    ['title pr and not (title eq "manager")', () => [ann]],
    ['(userName sw "ann" or userName sw "cid") and active eq true', () => [ann]],
    ['not (userName co "filter") and userName co "corp.example"', () => []],
    [`${ENTERPRISE}:employeeNumber eq "1002"`, () => [bob]],
    ['urn:ietf:params:scim:schemas:core:2.0:User:userName eq "cid.filter@other.example"', () => [cid]],
    ['name.givenName pr', () => []],
  ])('%s', async (filter, expected) => {
    const res = await scim.get('/Users', { filter });
    expect(res.status).toBe(200);
    expect(ids(res).filter((id) => [ann.id, bob.id, cid.id].includes(id))).toEqual(expected().map((u) => u.id));
  });

  it('compares meta.lastModified and meta.created as times', async () => {
    const all = await scim.get('/Users', { filter: 'userName co "filter"' });
    const bobCreated = all.body.Resources.find((r: { id: string }) => r.id === bob.id).meta.created;
    expect(ids(await scim.get('/Users', { filter: `meta.created gt "${bobCreated}" and userName co "filter"` }))).toEqual([cid.id]);
    expect(ids(await scim.get('/Users', { filter: `meta.lastModified le "${bobCreated}" and userName co "filter"` }))).toEqual([ann.id, bob.id]);
  });

  it.each([
    ['userName eq', 'invalidFilter'],
    ['userName xx "a"', 'invalidFilter'],
    ['active gt true', 'invalidFilter'],
    ['meta.created gt "yesterday"', 'invalidFilter'],
    ['password eq "x"', 'invalidFilter'],
  ])('refuses %s with 400 %s', async (filter, scimType) => {
    scimError(await scim.get('/Users', { filter }), 400, scimType);
  });
});

describe('paging and projection', () => {
  it('pages with startIndex and count in creation order, with totalResults', async () => {
    const made = [];
    for (let i = 0; i < 5; i++) {
      made.push(await provision(`page-${i}@paging.example`));
      (t.clock as ManualClock).advance(10);
    }
    const filter = 'userName ew "@paging.example"';
    const page = await scim.get('/Users', { filter, startIndex: 2, count: 2 });
    expect(page.body).toMatchObject({ totalResults: 5, startIndex: 2, itemsPerPage: 2 });
    expect(ids(page)).toEqual([made[1]!.id, made[2]!.id]);
    const last = await scim.get('/Users', { filter, startIndex: 5, count: 10 });
    expect(ids(last)).toEqual([made[4]!.id]);
    const beyond = await scim.get('/Users', { filter, startIndex: 9, count: 10 });
    expect(beyond.body).toMatchObject({ totalResults: 5, itemsPerPage: 0, Resources: [] });
    const zero = await scim.get('/Users', { filter, count: 0 });
    expect(zero.body).toMatchObject({ totalResults: 5, startIndex: 1, itemsPerPage: 0 });
    const lenient = await scim.get('/Users', { filter, startIndex: -3, count: -1 });
    expect(lenient.body).toMatchObject({ startIndex: 1, itemsPerPage: 0 });
    scimError(await scim.get('/Users', { startIndex: 'abc' }), 400, 'invalidValue');
  });

  it('keeps the unfiltered totalResults right through creates and deletes, and cuts late pages from the end', async () => {
    const before = (await scim.get('/Users', { count: 0 })).body.totalResults as number;
    const made = [];
    for (let i = 0; i < 6; i++) {
      made.push(await provision(`count-${i}@counting.example`));
      (t.clock as ManualClock).advance(10);
    }
    expect((await scim.get('/Users', { count: 0 })).body.totalResults).toBe(before + 6);
    expect((await scim.delete(`/Users/${made[2]!.id}`)).status).toBe(204);
    const all = await scim.get('/Users', { count: 0 });
    expect(all.body.totalResults).toBe(before + 5);
    // The last two (a page in the second half, cut from the end) in creation order.
    const tail = await scim.get('/Users', { startIndex: before + 4, count: 10 });
    expect(tail.body).toMatchObject({ totalResults: before + 5, startIndex: before + 4, itemsPerPage: 2 });
    expect(ids(tail)).toEqual([made[4]!.id, made[5]!.id]);
    // Another organization's directory users are not counted.
    const other = scimClient(t, (await scimOrganization(t, 'Counted apart')).token);
    expect((await other.get('/Users', { count: 0 })).body.totalResults).toBe(0);
  });

  it('applies attributes and excludedAttributes (ignoring case), always keeping id and schemas', async () => {
    const user = await provision('projection@paging.example', { name: { givenName: 'Pro', familyName: 'Jection' }, title: 'X' });
    const only = await scim.get(`/Users/${user.id}`, { attributes: 'USERNAME,name.givenName' });
    expect(only.body).toEqual({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], id: user.id, userName: 'projection@paging.example', name: { givenName: 'Pro' } });
    const without = await scim.get('/Users', { filter: `id eq "${user.id}"`, excludedAttributes: 'emails,Name,meta,id' });
    expect(without.body.Resources[0]).toEqual({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], id: user.id, userName: 'projection@paging.example', active: true, title: 'X' });
  });
});

describe('create', () => {
  it('refuses a user without a usable userName and stores nothing', async () => {
    const count = async () => (await t.db.selectFrom('directory_users').select(t.db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n;
    const before = await count();
    scimError(await scim.post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], displayName: 'No name' }), 400, 'invalidValue');
    scimError(await scim.post('/Users', { userName: '   ' }), 400, 'invalidValue');
    scimError(await scim.post('/Users', { userName: 'x'.repeat(256) }), 400, 'invalidValue');
    scimError(await scim.post('/Users', { userName: 'x@y.example', active: 'perhaps' }), 400, 'invalidValue');
    scimError(await scim.post('/Users', [{ userName: 'x@y.example' }]), 400, 'invalidSyntax');
    expect(await count()).toEqual(before);
  });

  it('accepts attribute names in any case and application/json', async () => {
    const res = await t.http.post('/scim/v2/Users').set('authorization', `Bearer ${org.token}`).set('content-type', 'application/json').send({ UserName: 'Case@Any.example', Name: { GivenName: 'Case' }, ACTIVE: 'True', CostCentreCode: 'Kept as given' });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toContain('application/scim+json');
    expect(res.body).toMatchObject({ userName: 'Case@Any.example', name: { givenName: 'Case' }, active: true, CostCentreCode: 'Kept as given' });
  });

  it('keeps a directory user whose e-mail is another account outside the verified domains, unlinked and explained', async () => {
    const outsider = await signUp(t, 'outsider');
    const res = await scim.post('/Users', { userName: outsider.email.toUpperCase() });
    expect(res.status).toBe(201);
    const memberOf = await t.db.selectFrom('members').select('id').where('user_id', '=', outsider.userId).execute();
    expect(memberOf).toEqual([]);
    const listed = await t.http.get('/v1/scim/users').set(...bearer(org.owner.token)).query({ linkState: 'unlinked' });
    expect(listed.body.items.find((u: { id: string }) => u.id === res.body.id)).toMatchObject({ linkState: 'unlinked', linkReason: 'email_belongs_to_other_account', memberId: null, email: outsider.email.toUpperCase() });
  });

  it('creates a new member when the same externalId is provisioned after a delete', async () => {
    const first = await provision('again@corp.example', { externalId: 'same-ext' });
    expect((await scim.delete(`/Users/${first.id}`)).status).toBe(204);
    const second = await provision('again@corp.example', { externalId: 'same-ext' });
    expect(second.id).not.toBe(first.id);
  });
});

describe('suspension', () => {
  // Members made through the API link when their directory user arrives: the domain is verified.
  beforeAll(() => verifyDomain(t, org.owner.organizationId, 'example.test'));

  it('cuts the member off at once and restores the same member with the same role', async () => {
    const admin = await addMember(t, org.owner.organizationId, 'admin');
    const key = (await t.http.post('/v1/api-keys').set(...bearer(admin.token)).send({ name: 'k' })).body.key as string;
    const worker = (await t.http.post('/v1/workers').set(...bearer(admin.token)).send({ name: 'Builder' })).body as { item: { id: string }; hostToken: string };
    const workerCalls = async () => [
      (await t.http.post(`/v1/workers/${worker.item.id}/heartbeat`).set('x-worker-token', worker.hostToken).send({})).status,
      (await t.http.get(`/v1/workers/${worker.item.id}/llm-config`).set('x-worker-token', worker.hostToken)).status,
    ];
    expect(await workerCalls()).toEqual([200, 200]);
    expect((await t.http.get('/v1/org').set(...bearer(admin.token))).status).toBe(200);
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(200);
    // The identity provider's record of the admin adopts the existing membership.
    const user = await provision(admin.email);
    const linked = await t.http.get('/v1/members').set(...bearer(org.owner.token));
    expect(linked.body.items.find((m: { id: string }) => m.id === admin.memberId)).toMatchObject({ role: 'admin', directoryUserId: user.id });

    const suspended = await scim.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect(suspended.body.active).toBe(false);
    // The session no longer reaches the organization; the API key is revoked.
    expect((await t.http.get('/v1/org').set(...bearer(admin.token))).status).toBe(404);
    expect((await t.http.get('/v1/members').set(...bearer(admin.token))).status).toBe(404);
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(401);
    // A worker acts for its creator: its token is refused too (no heartbeat, no provider keys).
    expect(await workerCalls()).toEqual([401, 401]);
    const listed = await t.http.get('/v1/members').set(...bearer(org.owner.token));
    expect(listed.body.items.find((m: { id: string }) => m.id === admin.memberId)).toMatchObject({ status: 'suspended', role: 'admin' });
    expect(listed.body.items.find((m: { id: string }) => m.id === org.owner.memberId)).toMatchObject({ status: 'active', directoryUserId: null });

    const restored = await scim.put(`/Users/${user.id}`, { userName: admin.email, active: true });
    expect(restored.body).toMatchObject({ id: user.id, active: true });
    expect((await t.http.get('/v1/org').set(...bearer(admin.token))).body.currentMember).toMatchObject({ id: admin.memberId, role: 'admin' });
    // Revoked keys stay revoked; the worker works again for its restored creator, until removal.
    expect((await t.http.get('/v1/members').set('x-api-key', key)).status).toBe(401);
    expect(await workerCalls()).toEqual([200, 200]);
    expect((await t.http.delete(`/v1/members/${admin.memberId}`).set(...bearer(org.owner.token))).status).toBe(204);
    expect(await workerCalls()).toEqual([401, 401]);
  });

  it("refuses a SCIM token's restore of the member who created it; another token restores them", async () => {
    const admin = await addMember(t, org.owner.organizationId, 'admin');
    const created = await t.http.post('/v1/scim/tokens').set(...bearer(admin.token)).send({ name: 'Admin token' });
    expect(created.status).toBe(201);
    const own = scimClient(t, created.body.token);
    const user = await provision(admin.email);
    const activeOp = (value: boolean) => ({ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value }] });
    expect((await scim.patch(`/Users/${user.id}`, activeOp(false))).body.active).toBe(false);

    const refused = scimError(await own.patch(`/Users/${user.id}`, activeOp(true)), 403);
    expect(refused.detail).toMatch(/created it/);
    scimError(await own.put(`/Users/${user.id}`, { userName: admin.email, active: true }), 403);
    expect((await scim.get(`/Users/${user.id}`)).body.active).toBe(false);
    expect((await t.http.get('/v1/org').set(...bearer(admin.token))).status).toBe(404);
    // The token still provisions everyone else, and its creator's other attributes.
    expect((await own.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'title', value: 'Lead' }] })).status).toBe(200);
    expect((await scim.patch(`/Users/${user.id}`, activeOp(true))).body.active).toBe(true);
    expect((await t.http.get('/v1/org').set(...bearer(admin.token))).status).toBe(200);
  });

  it('suspends or deletes through a token only members whose permissions its creator holds', async () => {
    const roles = (await t.http.get('/v1/roles').set(...bearer(org.owner.token))).body.items as { key: string; permissions: string[] }[];
    const base = roles.find((r) => r.key === 'member')!.permissions;
    expect((await t.http.post('/v1/roles').set(...bearer(org.owner.token)).send({ key: 'provisioner', name: 'Provisioner', permissions: [...base, 'scim.manage'] })).status).toBe(201);
    const provisioner = await addMember(t, org.owner.organizationId, 'member');
    expect((await t.http.post(`/v1/members/${provisioner.memberId}/role`).set(...bearer(org.owner.token)).send({ role: 'provisioner' })).status).toBe(200);
    const own = scimClient(t, (await t.http.post('/v1/scim/tokens').set(...bearer(provisioner.token)).send({ name: 'Low token' })).body.token);
    const admin = await addMember(t, org.owner.organizationId, 'admin');
    const member = await addMember(t, org.owner.organizationId, 'member');
    const adminUser = await provision(admin.email);
    const memberUser = await provision(member.email);
    const suspend = { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] };

    expect(scimError(await own.patch(`/Users/${adminUser.id}`, suspend), 403).detail).toMatch(/org\.update/);
    scimError(await own.put(`/Users/${adminUser.id}`, { userName: admin.email, active: false }), 403);
    scimError(await own.delete(`/Users/${adminUser.id}`), 403);
    expect((await t.http.get('/v1/org').set(...bearer(admin.token))).status).toBe(200);
    expect((await scim.get(`/Users/${adminUser.id}`)).body.active).toBe(true);

    // Nor by provisioning the admin inactive, which would adopt and suspend the membership.
    const other = await addMember(t, org.owner.organizationId, 'admin');
    scimError(await own.post('/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: other.email, active: false }), 403);
    expect((await t.http.get('/v1/org').set(...bearer(other.token))).status).toBe(200);

    expect((await own.patch(`/Users/${memberUser.id}`, suspend)).body.active).toBe(false);
    expect((await own.delete(`/Users/${memberUser.id}`)).status).toBe(204);
    // The owner's token acts on the admin.
    expect((await scim.patch(`/Users/${adminUser.id}`, suspend)).body.active).toBe(false);
  });

  it('protects the owner from suspension and deletion', async () => {
    const owner = (await provision(org.owner.email)).id;
    scimError(await scim.patch(`/Users/${owner}`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] }), 400, 'mutability');
    scimError(await scim.put(`/Users/${owner}`, { userName: org.owner.email, active: false }), 400, 'mutability');
    scimError(await scim.delete(`/Users/${owner}`), 400, 'mutability');
    expect((await scim.get(`/Users/${owner}`)).body.active).toBe(true);
    expect((await t.http.get('/v1/org').set(...bearer(org.owner.token))).status).toBe(200);
  });

  it('refuses bad PATCH paths and ops with SCIM errors, changing nothing', async () => {
    const user = await provision('patch.errors@corp.example', { title: 'Kept' });
    scimError(await scim.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'move', path: 'title', value: 'x' }] }), 400, 'invalidSyntax');
    scimError(await scim.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'emails[type eq', value: 'x' }] }), 400, 'invalidPath');
    scimError(await scim.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove' }] }), 400, 'noTarget');
    scimError(await scim.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'title', value: 'Changed' }, { op: 'replace', path: 'active', value: 'maybe' }] }), 400, 'invalidValue');
    expect((await scim.get(`/Users/${user.id}`)).body.title).toBe('Kept');
  });
});

describe('tokens and tenancy on /scim/v2', () => {
  it('answers 401 in the SCIM error shape for a missing or unknown token', async () => {
    const none = await t.http.get('/scim/v2/Users');
    scimError(none, 401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    scimError(await t.http.get('/scim/v2/Users').set('authorization', 'Bearer cpscim_unknown'), 401);
    scimError(await t.http.get('/scim/v2/Users').set('authorization', `Bearer ${org.owner.token}`), 401);
    scimError(await t.http.get('/scim/v2/Nope').set('authorization', `Bearer ${org.token}`), 404);
  });

  it("answers 404 for another organization's Users and Groups and changes nothing", async () => {
    const other = await scimOrganization(t, 'Other');
    const otherScim = scimClient(t, other.token);
    const mine = await provision('mine@tenant.example');
    const group = (await scim.post('/Groups', { displayName: 'Tenant group' })).body;
    scimError(await otherScim.get(`/Users/${mine.id}`), 404);
    scimError(await otherScim.patch(`/Users/${mine.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] }), 404);
    scimError(await otherScim.put(`/Users/${mine.id}`, { userName: 'mine@tenant.example', active: false }), 404);
    scimError(await otherScim.delete(`/Users/${mine.id}`), 404);
    scimError(await otherScim.get(`/Groups/${group.id}`), 404);
    scimError(await otherScim.delete(`/Groups/${group.id}`), 404);
    expect((await otherScim.get('/Users', { filter: 'userName eq "mine@tenant.example"' })).body.totalResults).toBe(0);
    // A member of this organization cannot be put in the other one's group.
    const theirs = (await otherScim.post('/Groups', { displayName: 'Theirs' })).body;
    scimError(await otherScim.patch(`/Groups/${theirs.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: mine.id }] }] }), 400, 'invalidValue');
    expect((await scim.get(`/Users/${mine.id}`)).body.active).toBe(true);
  });

  it('answers 403 on /scim/v2 once the organization loses the scim feature', async () => {
    const lapsed = await scimOrganization(t, 'Lapsed');
    expect((await scimClient(t, lapsed.token).get('/ServiceProviderConfig')).status).toBe(200);
    await t.db.updateTable('organizations').set({ plan: 'team' }).where('id', '=', lapsed.owner.organizationId).execute();
    scimError(await scimClient(t, lapsed.token).get('/Users'), 403);
  });
});

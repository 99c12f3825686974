import { createTestApp, type TestApp } from '../support/app';
import { bearer } from '../support/factories';
import { PATCH_OP, SCIM_JSON, scimClient, scimError, scimOrganization, type ScimOrg } from '../support/scim';

/**
 * The request sequences of Okta's SCIM 2.0 test plan (the Runscope "Okta SCIM 2.0 Spec Test" and
 * "CRUD" suites) and of Okta's group push: list with count/startIndex, filter by userName (in
 * another case too), 404 for an unknown id, create with a password, duplicate create, full-replace
 * PUT, deactivate and reactivate with a pathless PATCH, group create, rename, member add and
 * remove, delete — against a real database.
 */
let t: TestApp;
let org: ScimOrg;
let scim: ReturnType<typeof scimClient>;
beforeAll(async () => {
  t = await createTestApp();
  org = await scimOrganization(t, 'Okta');
  scim = scimClient(t, org.token);
}, 300_000);
afterAll(() => t.close());

const oktaUser = (login: string, extra: Record<string, unknown> = {}) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: login,
  name: { givenName: 'Runscope300', familyName: 'Barr' },
  emails: [{ primary: true, value: login, type: 'work' }],
  displayName: 'Runscope300 Barr',
  locale: 'en-US',
  externalId: '00ujl29u0le5T6Aj10h7',
  groups: [],
  password: '1mz050nq',
  active: true,
  ...extra,
});

describe('Okta SCIM 2.0 spec test', () => {
  it('answers the spec test requests', async () => {
    // Required test: the Users endpoint as a ListResponse. Users are directory users: the owner,
    // made through the API, is none until the identity provider provisions one.
    const empty = await scim.get('/Users', { count: 1, startIndex: 1 });
    expect(empty.status).toBe(200);
    expect(empty.headers['content-type']).toContain(SCIM_JSON);
    expect(empty.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 0, startIndex: 1, itemsPerPage: 0 });
    // An Okta login need not be an address.
    const login = await scim.post('/Users', oktaUser('okta.login.0042', { externalId: '00u0042', emails: [{ primary: true, value: 'okta.login.0042@atko.com', type: 'work' }] }));
    expect(login.status).toBe(201);
    const first = await scim.get('/Users', { count: 1, startIndex: 1 });
    const existing = first.body.Resources[0];
    expect(existing).toMatchObject({ id: login.body.id, userName: 'okta.login.0042', active: true });

    // Filter by an existing userName; the same in upper case; a random userName.
    const byName = await scim.get('/Users', { filter: `userName eq "${existing.userName}"`, startIndex: 1, count: 100 });
    expect(byName.body.Resources.map((r: { id: string }) => r.id)).toEqual([existing.id]);
    const upper = await scim.get('/Users', { filter: `userName eq "${existing.userName.toUpperCase()}"` });
    expect(upper.body.totalResults).toBe(1);
    const random = await scim.get('/Users', { filter: 'userName eq "Runscope-random-0f2a@atko.com"', startIndex: 1, count: 100 });
    expect(random.body).toMatchObject({ totalResults: 0, Resources: [] });

    // A random id is 404 with a SCIM error.
    scimError(await scim.get('/Users/010101001010101010'), 404);

    // Create a user (with a password, which is ignored and never returned).
    const created = await scim.post('/Users', oktaUser('Runscope300Barr@atko.com'));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ userName: 'Runscope300Barr@atko.com', active: true, locale: 'en-US', name: { givenName: 'Runscope300', familyName: 'Barr' }, externalId: '00ujl29u0le5T6Aj10h7' });
    expect(created.body).not.toHaveProperty('password');
    expect(created.body).not.toHaveProperty('groups');
    const user = await t.db.selectFrom('users').select(['password_hash', 'name']).where('email_normalized', '=', 'runscope300barr@atko.com').executeTakeFirstOrThrow();
    expect(user).toEqual({ password_hash: null, name: 'Runscope300 Barr' });
    // The user cannot sign in with that password (SCIM users sign in through SSO).
    expect((await t.http.post('/v1/auth/sign-in').send({ email: 'Runscope300Barr@atko.com', password: '1mz050nq' })).status).toBe(401);

    // The same user again is a uniqueness conflict, whatever the case of userName.
    scimError(await scim.post('/Users', oktaUser('runscope300barr@ATKO.com')), 409, 'uniqueness');

    const fetched = await scim.get(`/Users/${created.body.id}`);
    expect(fetched.body).toEqual(created.body);
  });
});

describe('Okta SCIM 2.0 CRUD test', () => {
  it('updates with a full-replace PUT, deactivates and reactivates with a pathless PATCH', async () => {
    const created = (await scim.post('/Users', oktaUser('crud.user@atko.com', { externalId: '00u1crud' }))).body;

    // Okta's profile update: the whole User with PUT.
    const replaced = await scim.put(`/Users/${created.id}`, {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      id: created.id,
      userName: 'crud.user@atko.com',
      name: { givenName: 'Updated', familyName: 'Barr' },
      emails: [{ primary: true, value: 'crud.user@atko.com', type: 'work' }],
      active: true,
      externalId: '00u1crud',
      groups: [],
      meta: { resourceType: 'User' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.name).toEqual({ givenName: 'Updated', familyName: 'Barr' });
    // Full replace: attributes left out of the PUT are gone.
    expect(replaced.body).not.toHaveProperty('locale');
    expect(replaced.body).not.toHaveProperty('displayName', 'Runscope300 Barr');

    const deactivated = await scim.patch(`/Users/${created.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.active).toBe(false);
    const members = await t.http.get('/v1/members').set(...bearer(org.owner.token));
    expect(members.body.items.find((m: { directoryUserId: string }) => m.directoryUserId === created.id)).toMatchObject({ status: 'suspended', role: 'member' });

    const reactivated = await scim.patch(`/Users/${created.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: true } }] });
    expect(reactivated.body).toMatchObject({ id: created.id, active: true });
    const again = await t.http.get('/v1/members').set(...bearer(org.owner.token));
    expect(again.body.items.find((m: { directoryUserId: string }) => m.directoryUserId === created.id)).toMatchObject({ status: 'active', role: 'member' });
  });

  it('pushes a group: create, rename with a pathless replace, add and remove members, delete', async () => {
    const a = (await scim.post('/Users', oktaUser('push.a@atko.com', { externalId: 'a' }))).body;
    const b = (await scim.post('/Users', oktaUser('push.b@atko.com', { externalId: 'b' }))).body;
    const created = await scim.post('/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Test SCIMv2', members: [] });
    expect(created.status).toBe(201);
    const id = created.body.id;

    const renamed = await scim.patch(`/Groups/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { id, displayName: 'Test SCIMv2 renamed' } }] });
    expect(renamed.body).toMatchObject({ id, displayName: 'Test SCIMv2 renamed' });

    const added = await scim.patch(`/Groups/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: a.id, display: 'push.a@atko.com' }, { value: b.id, display: 'push.b@atko.com' }] }],
    });
    expect(added.body.members.map((m: { value: string }) => m.value)).toEqual([a.id, b.id]);

    const removed = await scim.patch(`/Groups/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: `members[value eq "${a.id}"]` }] });
    expect(removed.body.members.map((m: { value: string }) => m.value)).toEqual([b.id]);

    // Okta's "replace members" form sets the whole list.
    const replacedMembers = await scim.patch(`/Groups/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'members', value: [{ value: a.id }] }] });
    expect(replacedMembers.body.members.map((m: { value: string }) => m.value)).toEqual([a.id]);

    const fetched = await scim.get(`/Groups/${id}`);
    expect(fetched.body).toEqual(replacedMembers.body);
    expect((await scim.delete(`/Groups/${id}`)).status).toBe(204);
    scimError(await scim.get(`/Groups/${id}`), 404);
  });
});

import { createTestApp, type TestApp } from '../support/app';
import { bearer } from '../support/factories';
import { ENTERPRISE, PATCH_OP, SCIM_JSON, scimClient, scimError, scimOrganization, type ScimOrg } from '../support/scim';

/**
 * The request sequence Microsoft Entra ID's provisioning service sends, in the shapes of
 * Microsoft's "Develop and plan provisioning for a SCIM endpoint" tutorial (create user with the
 * enterprise extension, GET by filter, zero-result filter, PATCH multi-valued and single-valued
 * attributes, disable, delete; create group, GET by displayName with excludedAttributes=members,
 * PATCH displayName, add and remove members), against a real database.
 */
let t: TestApp;
let org: ScimOrg;
let scim: ReturnType<typeof scimClient>;
beforeAll(async () => {
  t = await createTestApp();
  org = await scimOrganization(t, 'Entra');
  scim = scimClient(t, org.token);
}, 300_000);
afterAll(() => t.close());

const entraUser = (suffix: string) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE],
  externalId: `0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef-${suffix}`,
  userName: `Test_User_${suffix}@testuser.com`,
  active: true,
  emails: [{ primary: true, type: 'work', value: `Test_User_${suffix}@testuser.com` }],
  meta: { resourceType: 'User' },
  name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
  roles: [],
  [ENTERPRISE]: { employeeNumber: '701984', department: 'Tour Operations', manager: 'mgr-123' },
});

describe('Entra ID user provisioning', () => {
  it('creates, finds, updates, disables and deletes a user as Entra does', async () => {
    const created = await scim.post('/Users', entraUser('ab6490ee'));
    expect(created.status).toBe(201);
    expect(created.headers['content-type']).toContain(SCIM_JSON);
    const user = created.body;
    expect(user).toMatchObject({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE],
      id: expect.stringMatching(/^dus_/),
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef-ab6490ee',
      userName: 'Test_User_ab6490ee@testuser.com',
      active: true,
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      emails: [{ primary: true, type: 'work', value: 'Test_User_ab6490ee@testuser.com' }],
      [ENTERPRISE]: { employeeNumber: '701984', department: 'Tour Operations', manager: { value: 'mgr-123' } },
      meta: { resourceType: 'User', created: expect.any(String), lastModified: expect.any(String), location: expect.stringContaining(`/scim/v2/Users/${created.body.id}`) },
    });

    // The directory user is linked to a new member, shown in the organization's own API too.
    const members = await t.http.get('/v1/members').set(...bearer(org.owner.token));
    const member = members.body.items.find((m: { directoryUserId: string | null }) => m.directoryUserId === user.id);
    expect(member).toMatchObject({ role: 'member', status: 'active', user: { email: 'Test_User_ab6490ee@testuser.com' } });

    // Get user by query (userName compares ignoring case), and a query with zero results.
    const found = await scim.get('/Users', { filter: 'userName eq "test_user_AB6490EE@testuser.com"' });
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 1, startIndex: 1, itemsPerPage: 1 });
    expect(found.body.Resources[0].id).toBe(user.id);
    const none = await scim.get('/Users', { filter: 'userName eq "non-existent user"' });
    expect(none.body).toMatchObject({ totalResults: 0, itemsPerPage: 0, Resources: [] });

    // Get user by id; by an id that is not ours.
    expect((await scim.get(`/Users/${user.id}`)).body.userName).toBe('Test_User_ab6490ee@testuser.com');
    scimError(await scim.get('/Users/5171a35d82074e068ce2'), 404);

    // Update user [multi-valued properties]: "Replace" (capitalised), a filtered value path.
    const multi = await scim.patch(`/Users/${user.id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      ],
    });
    expect(multi.status).toBe(200);
    expect(multi.body.emails).toEqual([{ primary: true, type: 'work', value: 'updatedEmail@microsoft.com' }]);
    expect(multi.body.name).toEqual({ formatted: 'givenName familyName', familyName: 'updatedFamilyName', givenName: 'givenName' });
    expect(multi.body.userName).toBe('Test_User_ab6490ee@testuser.com');

    // Entra's other forms: "Add" on a filtered path, enterprise URN paths, a bare manager id, nulls.
    const quirks = await scim.patch(`/Users/${user.id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Add', path: 'emails[type eq "home"].value', value: 'home@example.org' },
        { op: 'Replace', path: `${ENTERPRISE}:employeeNumber`, value: '99887766' },
        { op: 'Add', path: `${ENTERPRISE}:manager`, value: 'mgr-456' },
        { op: 'Replace', path: 'title', value: 'tester' },
        { op: 'Replace', path: 'name.middleName', value: null },
      ],
    });
    expect(quirks.status).toBe(200);
    expect(quirks.body.emails).toEqual([
      { primary: true, type: 'work', value: 'updatedEmail@microsoft.com' },
      { type: 'home', value: 'home@example.org' },
    ]);
    expect(quirks.body[ENTERPRISE]).toEqual({ employeeNumber: '99887766', department: 'Tour Operations', manager: { value: 'mgr-456' } });
    expect(quirks.body.title).toBe('tester');

    // A pathless replace whose keys are attribute paths, and booleans as strings.
    const pathless = await scim.patch(`/Users/${user.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Replace', value: { 'name.givenName': 'Barbara', [`${ENTERPRISE}:department`]: 'Sales', displayName: 'Barbara Jensen' } }],
    });
    expect(pathless.status).toBe(200);
    expect(pathless.body).toMatchObject({ name: { givenName: 'Barbara', familyName: 'updatedFamilyName' }, displayName: 'Barbara Jensen', [ENTERPRISE]: { department: 'Sales' } });

    // Update user [single-valued properties]: a new userName (the UPN after a name change) is
    // taken at once; the sign-in e-mail stays the work e-mail, so the account keeps its address.
    const rename = await scim.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'userName', value: '5b50642d@testuser.com' }] });
    expect({ status: rename.status, userName: rename.body.userName }).toEqual({ status: 200, userName: '5b50642d@testuser.com' });

    // Disable user: "False" as a string.
    const disabled = await scim.patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
    expect(disabled.status).toBe(200);
    expect(disabled.body.active).toBe(false);
    const filtered = await scim.get('/Users', { filter: 'active eq false' });
    expect(filtered.body.Resources.map((r: { id: string }) => r.id)).toEqual([user.id]);

    // Delete user; the id is gone afterwards.
    const deleted = await scim.delete(`/Users/${user.id}`);
    expect(deleted.status).toBe(204);
    scimError(await scim.get(`/Users/${user.id}`), 404);
    scimError(await scim.delete(`/Users/${user.id}`), 404);
    const after = await t.http.get('/v1/members').set(...bearer(org.owner.token));
    expect(after.body.items.map((m: { id: string }) => m.id)).not.toContain(member.id);
  });
});

describe('Entra ID group provisioning', () => {
  it('creates a group, finds it by displayName, renames it and adds and removes members', async () => {
    const a = (await scim.post('/Users', entraUser('group-a'))).body;
    const b = (await scim.post('/Users', entraUser('group-b'))).body;
    const created = await scim.post('/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group', 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'displayName',
      meta: { resourceType: 'Group' },
    });
    expect(created.status).toBe(201);
    const group = created.body;
    expect(group).toMatchObject({ id: expect.stringMatching(/^tem_/), displayName: 'displayName', externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', members: [] });

    const byName = await scim.get('/Groups', { excludedAttributes: 'members', filter: 'displayName eq "displayName"' });
    expect(byName.body.totalResults).toBe(1);
    expect(byName.body.Resources[0]).toEqual({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], id: group.id, displayName: 'displayName', externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', meta: expect.any(Object) });

    const renamed = await scim.patch(`/Groups/${group.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'displayName', value: '1879db59-updatedDisplayName' }] });
    expect(renamed.body.displayName).toBe('1879db59-updatedDisplayName');

    const added = await scim.patch(`/Groups/${group.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: a.id }, { $ref: null, value: b.id }] }],
    });
    expect(added.status).toBe(200);
    expect(added.body.members.map((m: { value: string }) => m.value)).toEqual([a.id, b.id]);
    // The team holds their members.
    const listed = (await t.http.get('/v1/scim/users').set(...bearer(org.owner.token))).body.items as { id: string; memberId: string }[];
    const memberOf = (id: string) => listed.find((u) => u.id === id)!.memberId;
    const team = await t.http.get(`/v1/teams/${group.id}`).set(...bearer(org.owner.token));
    expect(team.body.item).toMatchObject({ name: '1879db59-updatedDisplayName', memberCount: 2 });
    const members = await t.http.get(`/v1/teams/${group.id}/members`).set(...bearer(org.owner.token));
    expect(members.body.items.map((m: { id: string }) => m.id).sort()).toEqual([memberOf(a.id), memberOf(b.id)].sort());

    const removed = await scim.patch(`/Groups/${group.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: a.id }] }] });
    expect(removed.body.members.map((m: { value: string }) => m.value)).toEqual([b.id]);

    expect((await scim.delete(`/Groups/${group.id}`)).status).toBe(204);
    scimError(await scim.get(`/Groups/${group.id}`), 404);
  });
});

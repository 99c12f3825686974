import { createTestApp, type TestApp } from '../support/app';
import { SCIM_JSON, scimOrganization, type ScimOrg } from '../support/scim';
import { canonicalScimPath } from '../../src/scim/route-spellings';

/**
 * Routes as identity providers spell them (docs/scim.md#the-protocol): `/users`, `/Users/`, and a
 * trailing slash before the query (`/Users/?filter=…`, Microsoft's SCIM validator) reach the
 * documented operation; ids and anything else stay as sent.
 */
let t: TestApp;
let org: ScimOrg;
beforeAll(async () => {
  t = await createTestApp();
  org = await scimOrganization(t, 'Spellings');
}, 300_000);
afterAll(() => t.close());

const get = (url: string) => t.http.get(url).set({ authorization: `Bearer ${org.token}`, accept: SCIM_JSON });

it.each([
  ['/scim/v2/users', '/scim/v2/Users'],
  ['/scim/v2/USERS/', '/scim/v2/Users'],
  ['/scim/v2/Users//', '/scim/v2/Users'],
  ['/scim/v2/groups/tm_abc/', '/scim/v2/Groups/tm_abc'],
  ['/scim/v2/users/Some-Id', '/scim/v2/Users/Some-Id'],
  ['/scim/v2/serviceproviderconfig', '/scim/v2/ServiceProviderConfig'],
  ['/scim/v2/schemas/urn:ietf:params:scim:schemas:core:2.0:User', '/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:User'],
  ['/scim/v2/Unknown/', '/scim/v2/Unknown'],
  ['/v1/users/', '/v1/users/'],
])('%s is read as %s', (sent, canonical) => {
  expect(canonicalScimPath(sent)).toBe(canonical);
});

describe('each spelling reaches the documented operation', () => {
  it.each(['/scim/v2/Users', '/scim/v2/users', '/scim/v2/Users/', '/scim/v2/users/'])('GET %s lists Users', async (path) => {
    const res = await get(path);
    expect({ status: res.status, schemas: res.body.schemas }).toEqual({ status: 200, schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'] });
  });

  it('a trailing slash before the query keeps the query (a filter that matches nothing answers no Users)', async () => {
    const res = await get('/scim/v2/Users/?filter=DisplayName+eq+%22Nobody%20here%22');
    expect({ status: res.status, totalResults: res.body.totalResults }).toEqual({ status: 200, totalResults: 0 });
    const bad = await get('/scim/v2/users/?filter=userName%20eq');
    expect({ status: bad.status, scimType: bad.body.scimType }).toEqual({ status: 400, scimType: 'invalidFilter' });
  });

  it.each(['/scim/v2/Groups/', '/scim/v2/groups', '/scim/v2/serviceProviderConfig/', '/scim/v2/resourcetypes/user', '/scim/v2/SCHEMAS'])('GET %s answers 200', async (path) => {
    expect((await get(path)).status).toBe(200);
  });

  it('an unknown id under a lower-case spelling is the SCIM 404', async () => {
    const res = await get('/scim/v2/users/no-such-user/');
    expect({ status: res.status, schemas: res.body.schemas }).toEqual({ status: 404, schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'] });
  });
});

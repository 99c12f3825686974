import type { Response } from 'supertest';
import type { TestApp } from './app';
import { bearer, createOrganization, type OrgOwner } from './factories';

export const SCIM_JSON = 'application/scim+json';

export interface ScimOrg {
  owner: OrgOwner;
  token: string;
  tokenId: string;
}

/** An organization on the enterprise plan (SCIM needs it) and a SCIM token made through the API. */
export async function scimOrganization(t: TestApp, name = 'Provisioned'): Promise<ScimOrg> {
  const owner = await createOrganization(t, name);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  const res = await t.http.post('/v1/scim/tokens').set(...bearer(owner.token)).send({ name: 'Identity provider' });
  if (res.status !== 201) throw new Error(`SCIM token: ${res.status} ${JSON.stringify(res.body)}`);
  return { owner, token: res.body.token, tokenId: res.body.item.id };
}

/** A SCIM client: bearer token, `application/scim+json` bodies, as identity providers send them. */
export function scimClient(t: TestApp, token: string) {
  const auth = { authorization: `Bearer ${token}`, accept: SCIM_JSON };
  const withBody = (req: ReturnType<TestApp['http']['post']>, body: unknown) =>
    req.set(auth).set('content-type', `${SCIM_JSON}; charset=utf-8`).send(JSON.stringify(body));
  return {
    get: (path: string, query?: Record<string, string | number>): Promise<Response> => t.http.get(`/scim/v2${path}`).set(auth).query(query ?? {}),
    post: (path: string, body: unknown): Promise<Response> => withBody(t.http.post(`/scim/v2${path}`), body),
    put: (path: string, body: unknown): Promise<Response> => withBody(t.http.put(`/scim/v2${path}`), body),
    patch: (path: string, body: unknown): Promise<Response> => withBody(t.http.patch(`/scim/v2${path}`), body),
    delete: (path: string): Promise<Response> => t.http.delete(`/scim/v2${path}`).set(auth),
  };
}

export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/** Asserts a SCIM error body and returns it. */
export function scimError(res: Response, status: number, scimType?: string) {
  expect({ status: res.status, type: res.headers['content-type'], schemas: res.body.schemas, statusText: res.body.status, scimType: res.body.scimType }).toEqual({
    status,
    type: expect.stringContaining(SCIM_JSON),
    schemas: [ERROR_SCHEMA],
    statusText: String(status),
    scimType,
  });
  expect(typeof res.body.detail).toBe('string');
  return res.body as { detail: string };
}

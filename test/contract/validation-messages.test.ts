import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, uniqueEmail } from '../support/factories';

/** A 400's message says what is allowed, in the request's own terms. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('400 invalid_request messages', () => {
  it('inviting someone as owner names the roles that may be given', async () => {
    const owner = await createOrganization(t);
    const res = await t.http.post('/v1/invitations').set(...bearer(owner.token)).send({ email: uniqueEmail(), role: 'owner' });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: ['body', 'role'], message: expect.stringContaining("must be one of the organization's roles other than owner") }]);
  });

  it('an enum lists its values', async () => {
    const owner = await createOrganization(t);
    const res = await t.http.get('/v1/audit-logs/export?format=xml').set(...bearer(owner.token));
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: ['query', 'format'], message: 'must be one of: "ndjson", "csv"' }]);
  });
});

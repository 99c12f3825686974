import { createTestApp, type TestApp } from '../support/app';
import { addMember, bearer, createOrganization, PASSWORD, type OrgOwner } from '../support/factories';
import { snapshot, snapshotDiff } from '../support/snapshot';
import { enterpriseOrganization, IDP_CERTIFICATE, OIDC_CONNECTION, SAML_CONNECTION } from '../support/sso';
import type { ManualClock } from '../support/clock';

let t: TestApp;
let org: OrgOwner;
beforeAll(async () => {
  t = await createTestApp({ env: { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8', PUBLIC_BASE_URL: 'https://cp.example.test' } });
  org = await enterpriseOrganization(t, 'Connections');
}, 120_000);
afterAll(() => t.close());

const create = (token: string, body: object) => t.http.post('/v1/sso/connections').set(...bearer(token)).send(body);

describe('OIDC connections', () => {
  it('creates, reads, lists, updates and deletes; the client secret is sealed and never returned', async () => {
    const res = await create(org.token, { ...OIDC_CONNECTION, roleMappings: [{ group: 'admins', role: 'admin' }] });
    expect(res.status).toBe(201);
    const id: string = res.body.item.id;
    expect(res.body.item).toEqual({
      id: expect.stringMatching(/^ssc_/),
      type: 'oidc',
      name: 'Entra ID',
      issuer: OIDC_CONNECTION.issuer,
      clientId: 'client-123',
      scopes: ['openid', 'email', 'profile'],
      redirectUri: 'https://cp.example.test/v1/auth/sso/oidc/callback',
      defaultRole: 'member',
      roleMappings: [{ group: 'admins', role: 'admin' }],
      enabled: true,
      createdAt: t.clock.now().toISOString(),
      updatedAt: t.clock.now().toISOString(),
    });
    const row = await t.db.selectFrom('sso_connections').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.oidc_client_secret_sealed).not.toContain(OIDC_CONNECTION.clientSecret);
    expect(row.oidc_client_secret_sealed!.startsWith('v1.')).toBe(true);

    const got = await t.http.get(`/v1/sso/connections/${id}`).set(...bearer(org.token));
    expect(got.body.item).toEqual(res.body.item);
    const list = await t.http.get('/v1/sso/connections').set(...bearer(org.token));
    expect(list.body.items.map((i: { id: string }) => i.id)).toContain(id);

    const patched = await t.http
      .patch(`/v1/sso/connections/${id}`)
      .set(...bearer(org.token))
      .send({ name: 'Entra', scopes: ['email', 'groups'], clientSecret: 'rotated-secret-value-abcdef', enabled: false, defaultRole: 'admin' });
    expect(patched.status).toBe(200);
    expect(patched.body.item).toMatchObject({ name: 'Entra', scopes: ['openid', 'email', 'groups'], enabled: false, defaultRole: 'admin' });
    const rotated = await t.db.selectFrom('sso_connections').select('oidc_client_secret_sealed').where('id', '=', id).executeTakeFirstOrThrow();
    expect(rotated.oidc_client_secret_sealed).not.toEqual(row.oidc_client_secret_sealed);

    const audit = await t.db.selectFrom('audit_logs').selectAll().where('target_id', '=', id).orderBy('created_at').execute();
    expect(audit.map((a) => a.action)).toEqual(['sso_connection.created', 'sso_connection.updated']);
    const everything = JSON.stringify([res.body, got.body, list.body, patched.body, audit]) + t.logs.join('');
    expect(everything).not.toContain(OIDC_CONNECTION.clientSecret);
    expect(everything).not.toContain('rotated-secret-value-abcdef');

    expect((await t.http.delete(`/v1/sso/connections/${id}`).set(...bearer(org.token))).status).toBe(204);
    const gone = await t.http.get(`/v1/sso/connections/${id}`).set(...bearer(org.token));
    expect([gone.status, gone.body.error]).toEqual([404, 'sso_connection_not_found']);
    expect((await t.http.delete(`/v1/sso/connections/${id}`).set(...bearer(org.token))).status).toBe(404);
  });

  it('accepts an http issuer only for a host inside OUTBOUND_ALLOWED_NETWORKS', async () => {
    const local = await create(org.token, { ...OIDC_CONNECTION, issuer: 'http://127.0.0.1:4000/oidc' });
    expect(local.status).toBe(201);
    for (const issuer of ['http://login.example.test/', 'https://10.0.0.5/', 'https://user:pw@login.example.test/', 'ftp://login.example.test/']) {
      const refused = await create(org.token, { ...OIDC_CONNECTION, issuer });
      expect([refused.status, refused.body.details?.[0]?.path]).toEqual([400, ['body', 'issuer']]);
    }
  });
});

describe('SAML connections', () => {
  it('stores the certificate as PEM and shows the service-provider URLs', async () => {
    const body64 = IDP_CERTIFICATE.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
    const res = await create(org.token, { ...SAML_CONNECTION, idpCertificate: body64, defaultRole: 'admin' });
    expect(res.status).toBe(201);
    const id: string = res.body.item.id;
    expect(res.body.item).toMatchObject({
      type: 'saml',
      idpEntityId: SAML_CONNECTION.idpEntityId,
      idpSsoUrl: SAML_CONNECTION.idpSsoUrl,
      idpCertificate: expect.stringContaining('-----BEGIN CERTIFICATE-----'),
      spEntityId: `https://cp.example.test/v1/sso/connections/${id}/saml/metadata`,
      metadataUrl: `https://cp.example.test/v1/sso/connections/${id}/saml/metadata`,
      acsUrl: 'https://cp.example.test/v1/auth/sso/saml/acs',
      defaultRole: 'admin',
    });
    expect(res.body.item.idpCertificate.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '')).toBe(body64);
  });

  it('serves SP metadata publicly; an OIDC or unknown connection is 404', async () => {
    const saml = (await create(org.token, SAML_CONNECTION)).body.item;
    const res = await t.http.get(`/v1/sso/connections/${saml.id}/saml/metadata`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('application/samlmetadata+xml');
    expect(res.text).toContain(`entityID="https://cp.example.test/v1/sso/connections/${saml.id}/saml/metadata"`);
    expect(res.text).toContain('Location="https://cp.example.test/v1/auth/sso/saml/acs"');
    expect(res.text).toContain('urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST');
    const oidc = (await create(org.token, OIDC_CONNECTION)).body.item;
    const notSaml = await t.http.get(`/v1/sso/connections/${oidc.id}/saml/metadata`);
    expect([notSaml.status, notSaml.body.error]).toEqual([404, 'sso_connection_not_found']);
    // Another id of the same kind: the last character changed (an id ending in 0 gets a 1).
    const unknown = saml.id.replace(/.$/, (c: string) => (c === '0' ? '1' : '0'));
    expect((await t.http.get(`/v1/sso/connections/${unknown}/saml/metadata`)).status).toBe(404);
  });

  it('refuses a certificate that is not one', async () => {
    const res = await create(org.token, { ...SAML_CONNECTION, idpCertificate: '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----' });
    expect([res.status, res.body.details?.[0]?.path]).toEqual([400, ['body', 'idpCertificate']]);
  });
});

describe('bad input writes nothing', () => {
  it.each([
    ['a SAML field on an OIDC connection', { ...OIDC_CONNECTION, idpEntityId: 'x' }, ['body', 'idpEntityId']],
    ['an OIDC field on a SAML connection', { ...SAML_CONNECTION, clientSecret: 'x' }, ['body', 'clientSecret']],
    ['a missing client secret', { type: 'oidc', name: 'x', issuer: OIDC_CONNECTION.issuer, clientId: 'c' }, ['body', 'clientSecret']],
    ['a missing certificate', { type: 'saml', name: 'x', idpEntityId: 'e', idpSsoUrl: 'https://idp.example.test/sso' }, ['body', 'idpCertificate']],
    ['an unknown default role', { ...OIDC_CONNECTION, defaultRole: 'nobody' }, ['body', 'defaultRole']],
    ['owner as the default role', { ...OIDC_CONNECTION, defaultRole: 'owner' }, ['body', 'defaultRole']],
    ['an unknown mapped role', { ...OIDC_CONNECTION, roleMappings: [{ group: 'g', role: 'admin' }, { group: 'h', role: 'ghost' }] }, ['body', 'roleMappings', '1', 'role']],
    ['an unknown type', { ...OIDC_CONNECTION, type: 'ldap' }, ['body', 'type']],
    ['an empty group', { ...OIDC_CONNECTION, roleMappings: [{ group: '', role: 'admin' }] }, ['body', 'roleMappings', '0', 'group']],
  ])('%s → 400 naming the field', async (_label, body, path) => {
    const before = await snapshot(t.db);
    const res = await create(org.token, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.details.map((d: { path: string[] }) => d.path)).toContainEqual(path);
    expect(snapshotDiff(before, await snapshot(t.db))).toEqual([]);
  });

  it('an update naming the other type is refused and changes nothing', async () => {
    const id = (await create(org.token, OIDC_CONNECTION)).body.item.id;
    const res = await t.http.patch(`/v1/sso/connections/${id}`).set(...bearer(org.token)).send({ name: 'y', idpCertificate: IDP_CERTIFICATE });
    expect([res.status, res.body.details?.[0]?.path]).toEqual([400, ['body', 'idpCertificate']]);
    expect((await t.http.get(`/v1/sso/connections/${id}`).set(...bearer(org.token))).body.item.name).toBe('Entra ID');
  });
});

describe('who may', () => {
  it('a member gets 403 permission_required, an API key 401 on writes, another organization 404', async () => {
    const id = (await create(org.token, OIDC_CONNECTION)).body.item.id;
    const member = await addMember(t, org.organizationId, 'member');
    const denied = await create(member.token, OIDC_CONNECTION);
    expect([denied.status, denied.body.reason]).toEqual([403, 'permission_required']);
    expect((await t.http.get('/v1/sso/connections').set(...bearer(member.token))).status).toBe(403);

    const admin = await addMember(t, org.organizationId, 'admin');
    expect((await create(admin.token, OIDC_CONNECTION)).status).toBe(201);

    const key = (await t.http.post('/v1/api-keys').set(...bearer(org.token)).send({ name: 'k' })).body.key;
    expect((await t.http.post('/v1/sso/connections').set('x-api-key', key).send(OIDC_CONNECTION)).status).toBe(401);
    expect((await t.http.patch(`/v1/sso/connections/${id}`).set('x-api-key', key).send({ name: 'z' })).status).toBe(401);
    expect((await t.http.delete(`/v1/sso/connections/${id}`).set('x-api-key', key)).status).toBe(401);
    expect((await t.http.get(`/v1/sso/connections/${id}`).set('x-api-key', key)).status).toBe(200);

    const other = await enterpriseOrganization(t, 'Other');
    expect((await t.http.get(`/v1/sso/connections/${id}`).set(...bearer(other.token))).status).toBe(404);
    expect((await t.http.patch(`/v1/sso/connections/${id}`).set(...bearer(other.token)).send({ name: 'x' })).status).toBe(404);
    expect((await t.http.delete(`/v1/sso/connections/${id}`).set(...bearer(other.token))).status).toBe(404);
    expect((await t.http.get('/v1/sso/connections').set(...bearer(other.token))).body.items).toEqual([]);
  });

  it('needs the plan feature sso to write (402), not to read', async () => {
    const free = await createOrganization(t, 'Free');
    const res = await create(free.token, OIDC_CONNECTION);
    expect([res.status, res.body.error, res.body.feature]).toEqual([402, 'enterprise_plan_required', 'sso']);
    expect((await t.http.get('/v1/sso/connections').set(...bearer(free.token))).status).toBe(200);
  });
});

// Last in the file: it moves the shared clock past the fresh-session window.
describe('fresh session', () => {
  it('writes need a recent sign-in; reauthenticate renews it', async () => {
    const id = (await create(org.token, OIDC_CONNECTION)).body.item.id;
    (t.clock as ManualClock).advance(16 * 60_000);
    const before = await snapshot(t.db);
    for (const res of [
      await create(org.token, OIDC_CONNECTION),
      await t.http.patch(`/v1/sso/connections/${id}`).set(...bearer(org.token)).send({ name: 'late' }),
      await t.http.delete(`/v1/sso/connections/${id}`).set(...bearer(org.token)),
    ]) {
      expect([res.status, res.body.reason]).toEqual([403, 'fresh_session_required']);
    }
    expect(snapshotDiff(before, await snapshot(t.db))).toEqual([]);
    expect((await t.http.post('/v1/auth/reauthenticate').set(...bearer(org.token)).send({ password: PASSWORD })).status).toBe(200);
    expect((await create(org.token, OIDC_CONNECTION)).status).toBe(201);
  });
});

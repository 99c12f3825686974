import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';
import { ATTR_GROUPS_CLAIM, SamlTestIdp } from '../fakes/saml-idp';
import { samlSpFor } from '../../src/sso/saml';
import { counts, PUBLIC_BASE_URL, RETURN_ORIGIN, SSO_ENV, uniqueDomain, verifyDomain } from '../support/sso-signin';

/**
 * The SAML assertion consumer service wired to sign-in (docs/sso.md#signing-in): a samlify-signed
 * response signs the user in (just-in-time member, mapped role), an assertion id is accepted once,
 * RelayState forged or reused is refused. The tampered responses are covered by sso-saml.test.ts.
 */
let t: TestApp;
const idp = new SamlTestIdp();
let organizationId: string;
let connectionId: string;
let domain: string;

beforeAll(async () => {
  t = await createTestApp({ env: SSO_ENV });
  const owner = await createOrganization(t, 'SAML Org');
  organizationId = owner.organizationId;
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', organizationId).execute();
  domain = uniqueDomain();
  await verifyDomain(t, organizationId, domain);
  const res = await t.http
    .post('/v1/sso/connections')
    .set(...bearer(owner.token))
    .send({ type: 'saml', name: 'samlify', ...idp.config(), roleMappings: [{ group: 'admins', role: 'admin' }] });
  if (res.status !== 201) throw new Error(`create connection failed: ${res.status} ${JSON.stringify(res.body)}`);
  connectionId = res.body.item.id;
});
afterAll(() => t?.close());

const sp = () => samlSpFor(PUBLIC_BASE_URL, connectionId);

async function answered(start: Record<string, unknown>, nameId: string, attributes: Record<string, string | string[]> = {}) {
  const res = await t.http.post('/v1/auth/sso/start').send(start);
  expect(res.status).toBe(200);
  return { ...(await idp.answer(res.body.authorizeUrl, sp(), { nameId, attributes })), verifier: res.body.verifier as string };
}

function post(form: Record<string, string>) {
  return t.http.post('/v1/auth/sso/saml/acs').type('form').send(form);
}

test('a signed response signs in with a just-in-time member; the same assertion again is refused', async () => {
  const issued = await answered({ email: `x@${domain}` }, `grace@${domain}`, { [ATTR_GROUPS_CLAIM]: ['admins'] });
  const res = await post({ SAMLResponse: issued.samlResponse, RelayState: issued.relayState! });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ ok: true, user: { email: `grace@${domain}` } });
  const org = await t.http.get('/v1/org').set(...bearer(res.body.session.token));
  expect(org.body).toMatchObject({ organization: { id: organizationId }, currentMember: { role: 'admin' } });

  // The same assertion answered to a new request (a replay through another login state).
  const again = await t.http.post('/v1/auth/sso/start').send({ connectionId });
  const request = await idp.parseAuthnRequest(again.body.authorizeUrl, sp());
  const replay = await idp.respond(sp(), request.requestId, { nameId: `grace@${domain}` }, { assertionId: issued.assertionId });
  const before = await counts(t);
  const refused = await post({ SAMLResponse: replay.samlResponse, RelayState: request.relayState! });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body', 'SAMLResponse'] }] });
  expect(await counts(t)).toEqual(before);
});

test('RelayState forged or reused is refused; without RelayState the request id finds the state', async () => {
  const issued = await answered({ connectionId }, `heidi@${domain}`);
  const forged = await post({ SAMLResponse: issued.samlResponse, RelayState: 'forged' });
  expect(forged.status).toBe(400);
  expect(forged.body.details[0].path).toEqual(['body', 'RelayState']);
  expect((await post({ SAMLResponse: issued.samlResponse })).status).toBe(200);
  expect((await post({ SAMLResponse: issued.samlResponse, RelayState: issued.relayState! })).status).toBe(400);
});

test('with returnTo: 302 with a code; a refusal goes back with error', async () => {
  const ok = await answered({ connectionId, returnTo: `${RETURN_ORIGIN}/saml` }, `ivan@${domain}`);
  const res = await post({ SAMLResponse: ok.samlResponse, RelayState: ok.relayState! });
  expect(res.status).toBe(302);
  const code = new URL(res.headers.location!).searchParams.get('code')!;
  // Only with the verifier of the start that began this sign-in.
  const other = (await t.http.post('/v1/auth/sso/start').send({ connectionId })).body.verifier as string;
  expect((await t.http.post('/v1/auth/sso/exchange').send({ code, verifier: other })).status).toBe(400);
  expect((await t.http.post('/v1/auth/sso/exchange').send({ code, verifier: ok.verifier })).status).toBe(200);

  const outside = await answered({ connectionId, returnTo: `${RETURN_ORIGIN}/saml` }, 'judy@elsewhere.test');
  const refused = await post({ SAMLResponse: outside.samlResponse, RelayState: outside.relayState! });
  expect(refused.status).toBe(302);
  expect(new URL(refused.headers.location!).searchParams.get('error')).toBe('email_domain_not_verified');
});

import { randomBytes } from 'node:crypto';
import { DOMParser } from '@xmldom/xmldom';
import type { Response } from 'supertest';
import { newId } from '../../src/lib/ids';
import { samlSpFor, type SamlSpConfig } from '../../src/sso/saml';
import { createTestApp, type TestApp } from '../support/app';
import { bearer } from '../support/factories';
import { enterpriseOrganization } from '../support/sso';
import { PUBLIC_BASE_URL, RETURN_ORIGIN as APP_ORIGIN, SSO_ENV, uniqueDomain, verifyDomain } from '../support/sso-signin';
import type { OrgOwner } from '../support/factories';
import { ATTR_GROUPS_CLAIM, NAMEID_PERSISTENT, SamlTestIdp, type SamlResponseKnobs, type SamlTestUser } from '../fakes/saml-idp';
import { editNameId, stripSignatures, toBase64, wrapSignature } from '../fakes/saml-tamper';

/**
 * SAML sign-in through the HTTP API, with samlify as the organization's identity provider:
 * POST /v1/auth/sso/start → the IdP answers the AuthnRequest → the browser posts the form to
 * POST /v1/auth/sso/saml/acs. Every forged or mismatched response is a clear 4xx (or a redirect to
 * returnTo with error=), never a 500, and creates nothing; an assertion is accepted once.
 */

const DOMAIN = uniqueDomain();

let t: TestApp;
let owner: OrgOwner;
let idp: SamlTestIdp;
let connectionId: string;
let sp: SamlSpConfig;

beforeAll(async () => {
  t = await createTestApp({ env: SSO_ENV });
  owner = await enterpriseOrganization(t, 'SAML Org');
  idp = new SamlTestIdp();
  const created = await t.http
    .post('/v1/sso/connections')
    .set(...bearer(owner.token))
    .send({
      type: 'saml',
      name: 'Test IdP',
      idpEntityId: idp.entityId,
      idpSsoUrl: idp.ssoUrl,
      idpCertificate: idp.certificate,
      roleMappings: [{ group: 'cp-admins', role: 'admin' }],
    });
  if (created.status !== 201) throw new Error(`create connection: ${created.status} ${JSON.stringify(created.body)}`);
  connectionId = created.body.item.id;
  sp = samlSpFor(PUBLIC_BASE_URL, connectionId);
  // Domain verification (DNS) has its own tests; here the organization simply owns a verified one.
  await verifyDomain(t, owner.organizationId, DOMAIN);
}, 300_000);
afterAll(() => t?.close());

const person = (label: string, extra: Partial<SamlTestUser> = {}): SamlTestUser => ({
  nameId: `${label}-${randomBytes(3).toString('hex')}@${DOMAIN}`,
  ...extra,
});

/** Starts a sign-in and has the IdP answer it; the response is issued at the app's clock. */
async function idpAnswer(user: SamlTestUser, knobs: SamlResponseKnobs = {}, returnTo?: string) {
  const start = await t.http.post('/v1/auth/sso/start').send({ connectionId, ...(returnTo ? { returnTo } : {}) });
  expect(start.status).toBe(200);
  expect(start.body.authorizeUrl.startsWith(`${idp.ssoUrl}?`)).toBe(true);
  return { ...(await idp.answer(start.body.authorizeUrl, sp, user, { now: t.clock.now(), ...knobs })), verifier: start.body.verifier as string };
}

function postAcs(form: { SAMLResponse: string; RelayState?: string | null }): Promise<Response> {
  const body: Record<string, string> = { SAMLResponse: form.SAMLResponse };
  if (form.RelayState) body.RelayState = form.RelayState;
  return t.http.post('/v1/auth/sso/saml/acs').type('form').send(body);
}

const COUNTED = ['users', 'members', 'sso_identities', 'sessions', 'sso_exchange_codes', 'sso_saml_assertions', 'audit_logs'] as const;

async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of COUNTED) {
    const row = await t.db
      .selectFrom(table as any)
      .select((eb: any) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number((row as { n: string | number }).n);
  }
  return out;
}

/** A refused ACS post: a 4xx in the usual error shape, no stack, and nothing written. */
async function expectRefused(form: { SAMLResponse: string; RelayState?: string | null }, status = 400): Promise<Response> {
  const before = await counts();
  const res = await postAcs(form);
  expect({ status: res.status, error: res.body.error }).toEqual({ status, error: status === 400 ? 'invalid_request' : expect.any(String) });
  expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+|node_modules|stack/i);
  expect(await counts()).toEqual(before);
  return res;
}

describe('SAML sign-in', () => {
  test('SP metadata route: entity id, POST ACS, signed assertions wanted', async () => {
    const res = await t.http
      .get(`/v1/sso/connections/${connectionId}/saml/metadata`)
      .buffer(true)
      .parse((stream, done) => {
        let text = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => (text += chunk));
        stream.on('end', () => done(null, text));
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/samlmetadata\+xml/);
    const xml = res.body as string;
    const root = new DOMParser().parseFromString(xml, 'text/xml').documentElement!;
    expect(root.localName).toBe('EntityDescriptor');
    expect(root.getAttribute('entityID')).toBe(sp.entityId);
    expect(sp.entityId).toBe(`${PUBLIC_BASE_URL}/v1/sso/connections/${connectionId}/saml/metadata`);
    const descriptor = root.getElementsByTagName('SPSSODescriptor')[0];
    expect(descriptor.getAttribute('WantAssertionsSigned')).toBe('true');
    const acs = descriptor.getElementsByTagName('AssertionConsumerService')[0];
    expect(acs.getAttribute('Binding')).toBe('urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST');
    expect(acs.getAttribute('Location')).toBe(`${PUBLIC_BASE_URL}/v1/auth/sso/saml/acs`);
    // An id that is no connection of anyone's: 404.
    expect((await t.http.get(`/v1/sso/connections/${newId('ssoConnection')}/saml/metadata`)).status).toBe(404);
  });

  test('the AuthnRequest names our entity id and ACS; RelayState carries the login state', async () => {
    const start = await t.http.post('/v1/auth/sso/start').send({ email: `someone@${DOMAIN}` });
    expect(start.status).toBe(200);
    const request = await idp.parseAuthnRequest(start.body.authorizeUrl, sp);
    expect(request.issuer).toBe(sp.entityId);
    expect(request.acsUrl).toBe(sp.acsUrl);
    expect(request.relayState).toEqual(expect.any(String));
  });

  test('full sign-in without returnTo: {ok, user, session}; a member just in time; the session works', async () => {
    const user = person('alice');
    const before = await counts();
    const answered = await idpAnswer(user, { sign: 'assertion' });
    const res = await postAcs({ SAMLResponse: answered.samlResponse, RelayState: answered.relayState });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, user: { email: user.nameId }, session: { token: expect.any(String) } });
    const after = await counts();
    expect(after).toMatchObject({
      users: before.users + 1,
      members: before.members + 1,
      sso_identities: before.sso_identities + 1,
      sessions: before.sessions + 1,
      sso_saml_assertions: before.sso_saml_assertions + 1,
    });
    const identity = await t.db.selectFrom('sso_identities').selectAll().where('connection_id', '=', connectionId).where('subject', '=', user.nameId).executeTakeFirstOrThrow();
    expect(identity.user_id).toBe(res.body.user.id);
    const org = await t.http.get('/v1/org').set(...bearer(res.body.session.token));
    expect(org.status).toBe(200);
    expect(org.body).toMatchObject({ organization: { id: owner.organizationId }, currentMember: { role: 'member' } });
  });

  test('with returnTo: 302 to it with a one-time code, exchanged once for {ok, user, session}', async () => {
    const user = person('bob', { nameId: `opaque-${randomBytes(4).toString('hex')}`, nameIdFormat: NAMEID_PERSISTENT });
    user.attributes = { email: `bob-${randomBytes(3).toString('hex')}@${DOMAIN}`, [ATTR_GROUPS_CLAIM]: ['cp-admins', 'other'] };
    const answered = await idpAnswer(user, { sign: 'response' }, `${APP_ORIGIN}/after-login?x=1`);
    const res = await postAcs({ SAMLResponse: answered.samlResponse, RelayState: answered.relayState });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.location);
    expect(location.origin + location.pathname).toBe(`${APP_ORIGIN}/after-login`);
    const code = location.searchParams.get('code');
    expect(code).toEqual(expect.any(String));
    const exchanged = await t.http.post('/v1/auth/sso/exchange').send({ code, verifier: answered.verifier });
    expect(exchanged.status).toBe(200);
    expect(exchanged.body).toMatchObject({ ok: true, user: { email: user.attributes.email }, session: { token: expect.any(String) } });
    expect((await t.http.post('/v1/auth/sso/exchange').send({ code, verifier: answered.verifier })).status).toBe(400);
    // The group mapping gave the just-in-time member the admin role; the identity is the NameID.
    const member = await t.db.selectFrom('members').select('role').where('organization_id', '=', owner.organizationId).where('user_id', '=', exchanged.body.user.id).executeTakeFirstOrThrow();
    expect(member.role).toBe('admin');
    const identity = await t.db.selectFrom('sso_identities').select('user_id').where('connection_id', '=', connectionId).where('subject', '=', user.nameId).executeTakeFirst();
    expect(identity?.user_id).toBe(exchanged.body.user.id);
  });

  test('a second sign-in of the same subject creates nothing new', async () => {
    const user = person('carol');
    const first = await idpAnswer(user);
    expect((await postAcs({ SAMLResponse: first.samlResponse, RelayState: first.relayState })).status).toBe(200);
    const before = await counts();
    const second = await idpAnswer(user);
    const res = await postAcs({ SAMLResponse: second.samlResponse, RelayState: second.relayState });
    expect(res.status).toBe(200);
    const after = await counts();
    expect(after).toMatchObject({ users: before.users, members: before.members, sso_identities: before.sso_identities, sessions: before.sessions + 1 });
  });
});

describe('refused at the ACS, nothing created', () => {
  const mallory = () => `mallory-${randomBytes(3).toString('hex')}@${DOMAIN}`;

  test.each([
    ['NameID edited after signing', 'invalid_signature', async () => {
      const a = await idpAnswer(person('u1'), { sign: 'response' });
      return { SAMLResponse: editNameId(a.xml, mallory()), RelayState: a.relayState };
    }],
    ['signature wrapping: a second, unsigned assertion beside the signed one', 'invalid_signature', async () => {
      const a = await idpAnswer(person('u2'), { sign: 'assertion' });
      return { SAMLResponse: wrapSignature(a.xml, 'sibling', mallory()), RelayState: a.relayState };
    }],
    ['signature wrapping: signed assertion moved to Extensions, evil one in its place', 'invalid_signature', async () => {
      const a = await idpAnswer(person('u3'), { sign: 'assertion' });
      return { SAMLResponse: wrapSignature(a.xml, 'extensions-copied-signature', mallory()), RelayState: a.relayState };
    }],
    ['signature wrapping: the signed Response wrapped in an unsigned one', 'invalid_signature', async () => {
      const a = await idpAnswer(person('u4'), { sign: 'response' });
      return { SAMLResponse: wrapSignature(a.xml, 'response', mallory()), RelayState: a.relayState };
    }],
    ['signed by another key carrying its certificate in KeyInfo', 'invalid_signature', async () => {
      const a = await idpAnswer(person('u5'), { sign: 'both', signWithOtherKey: true });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['unsigned response', 'invalid_signature', async () => {
      const a = await idpAnswer(person('u6'), { sign: 'none' });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['signatures stripped', 'invalid_signature', async () => {
      const a = await idpAnswer(person('u7'), { sign: 'both' });
      return { SAMLResponse: stripSignatures(a.xml), RelayState: a.relayState };
    }],
    ['wrong Audience', 'audience_mismatch', async () => {
      const a = await idpAnswer(person('u8'), { audience: 'https://other-sp.example.test' });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['wrong Destination', 'destination_mismatch', async () => {
      const a = await idpAnswer(person('u9'), { destination: 'https://evil.example.test/acs', recipient: 'https://evil.example.test/acs' });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['wrong InResponseTo', 'in_response_to_mismatch', async () => {
      const a = await idpAnswer(person('u10'), { inResponseTo: '_not-our-request' });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['expired', 'expired', async () => {
      const a = await idpAnswer(person('u11'), { now: new Date(t.clock.now().getTime() - 20 * 60_000) });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['not yet valid', 'not_yet_valid', async () => {
      const later = t.clock.now().getTime() + 10 * 60_000;
      const a = await idpAnswer(person('u12'), { notBefore: new Date(later), notOnOrAfter: new Date(later + 5 * 60_000) });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['another issuer', 'issuer_mismatch', async () => {
      const a = await idpAnswer(person('u13'), { issuer: 'https://impostor.example.test' });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['an IdP error status', 'idp_error', async () => {
      const a = await idpAnswer(person('u14'), { statusCode: 'urn:oasis:names:tc:SAML:2.0:status:Requester' });
      return { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    }],
    ['base64 junk', 'malformed_response', async () => {
      const a = await idpAnswer(person('u15'));
      return { SAMLResponse: randomBytes(600).toString('base64'), RelayState: a.relayState };
    }],
    ['not base64 at all', 'malformed_response', async () => {
      const a = await idpAnswer(person('u16'));
      return { SAMLResponse: 'this is <not> a SAML response', RelayState: a.relayState };
    }],
    ['XML with a DOCTYPE (XXE)', 'malformed_response', async () => {
      const a = await idpAnswer(person('u17'));
      const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${a.xml}`;
      return { SAMLResponse: toBase64(xxe), RelayState: a.relayState };
    }],
    ['a forged RelayState', 'RelayState', async () => {
      const a = await idpAnswer(person('u18'));
      return { SAMLResponse: a.samlResponse, RelayState: 'forged-state' };
    }],
  ])('%s → 400 (%s)', async (_name, reason, build) => {
    const form = await build();
    const res = await expectRefused(form);
    // Refused for the intended reason (not, say, a clock mismatch), named without library text.
    expect(JSON.stringify(res.body)).toContain(reason);
  });

  test('with returnTo: a refused response redirects there with error=, creating nothing', async () => {
    const a = await idpAnswer(person('r1'), { sign: 'assertion' }, `${APP_ORIGIN}/back`);
    const before = await counts();
    const res = await postAcs({ SAMLResponse: wrapSignature(a.xml, 'sibling', mallory()), RelayState: a.relayState });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.location);
    expect(location.origin + location.pathname).toBe(`${APP_ORIGIN}/back`);
    expect(location.searchParams.get('error')).toEqual(expect.any(String));
    expect(location.searchParams.get('code')).toBeNull();
    expect(await counts()).toEqual(before);
  });

  test('a replayed response is refused the second time', async () => {
    const a = await idpAnswer(person('replay'));
    const form = { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    expect((await postAcs(form)).status).toBe(200);
    await expectRefused(form);
    // Without RelayState (the login state is then found by InResponseTo): refused as well.
    await expectRefused({ SAMLResponse: a.samlResponse });
  });

  test('the same response posted three times at once: exactly one sign-in', async () => {
    const a = await idpAnswer(person('race'));
    const form = { SAMLResponse: a.samlResponse, RelayState: a.relayState };
    const before = await counts();
    const results = await Promise.all([postAcs(form), postAcs(form), postAcs(form)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    const after = await counts();
    expect(after.sessions).toBe(before.sessions + 1);
    expect(after.sso_identities).toBe(before.sso_identities + 1);
    expect(after.sso_saml_assertions).toBe(before.sso_saml_assertions + 1);
  });

  test('two subjects with one e-mail signing in for the first time at once: one account, one member, two identities', async () => {
    const email = `twin-${randomBytes(3).toString('hex')}@${DOMAIN}`;
    const twin = (): SamlTestUser => ({ nameId: `opaque-${randomBytes(4).toString('hex')}`, nameIdFormat: NAMEID_PERSISTENT, attributes: { email } });
    const [a, b] = [await idpAnswer(twin()), await idpAnswer(twin())];
    const before = await counts();
    const results = await Promise.all([a, b].map((x) => postAcs({ SAMLResponse: x.samlResponse, RelayState: x.relayState })));
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    expect(results[0]!.body.user.id).toBe(results[1]!.body.user.id);
    const after = await counts();
    expect(after.users).toBe(before.users + 1);
    expect(after.members).toBe(before.members + 1);
    expect(after.sso_identities).toBe(before.sso_identities + 2);
  });

  test('a new response reusing an accepted assertion id is refused (replay record)', async () => {
    const user = person('replay-id');
    const first = await idpAnswer(user);
    expect((await postAcs({ SAMLResponse: first.samlResponse, RelayState: first.relayState })).status).toBe(200);
    const second = await idpAnswer(user, { assertionId: first.assertionId });
    const res = await expectRefused({ SAMLResponse: second.samlResponse, RelayState: second.relayState });
    expect(res.body.details).toEqual([{ path: ['body', 'SAMLResponse'], message: expect.stringMatching(/already used/) }]);
  });

  test('a response meant for another login state (its InResponseTo) is refused', async () => {
    const one = await idpAnswer(person('x1'));
    const two = await idpAnswer(person('x2'));
    await expectRefused({ SAMLResponse: one.samlResponse, RelayState: two.relayState });
  });

  test('an e-mail outside the verified domains: 403 email_domain_not_verified', async () => {
    const a = await idpAnswer({ nameId: `eve-${randomBytes(3).toString('hex')}@elsewhere.example.org` });
    const res = await expectRefused({ SAMLResponse: a.samlResponse, RelayState: a.relayState }, 403);
    expect(JSON.stringify(res.body)).toContain('email_domain_not_verified');
  });
});

import { DOMParser } from '@xmldom/xmldom';
import * as samlify from 'samlify';
import {
  peekSamlInResponseTo,
  samlAuthorizeUrl,
  samlCertificateValid,
  samlMetadataXml,
  samlSpFor,
  SamlRejected,
  verifySamlResponse,
  type SamlSpConfig,
} from '../../src/sso/saml';
import {
  ATTR_EMAIL_CLAIM,
  ATTR_GROUPS_CLAIM,
  NAMEID_PERSISTENT,
  SamlTestIdp,
  TEST_IDP_KEYS,
  type SamlResponseKnobs,
  type SamlTestUser,
} from '../fakes/saml-idp';
import { editNameId, stripSignatures, toBase64, wrapSignature, type WrappingAttack } from '../fakes/saml-tamper';

/**
 * The SAML service provider module against samlify as the identity provider: what it accepts,
 * what it reads, and every forged or mismatched response it must refuse with a stable reason.
 */

const idp = new SamlTestIdp();
const sp: SamlSpConfig = samlSpFor('https://cp.example.test/', 'ssoc_01abc');
const alice: SamlTestUser = { nameId: 'alice@corp.example' };
const MINUTE = 60_000;

async function login(user: SamlTestUser = alice, knobs: SamlResponseKnobs = {}) {
  const { url, requestId } = await samlAuthorizeUrl(idp.config(), sp, 'relay-state-1');
  const issued = await idp.answer(url, sp, user, knobs);
  return { ...issued, requestId };
}

function verify(samlResponse: string, requestId: string, now = new Date()) {
  return verifySamlResponse(idp.config(), sp, samlResponse, { requestId, now });
}

async function expectRejected(promise: Promise<unknown>, reason: string): Promise<void> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SamlRejected);
  expect((err as SamlRejected).reason).toBe(reason);
  // Nothing of the libraries' messages (or of the posted values) is carried.
  expect((err as SamlRejected).message).toBe(`SAML response refused: ${reason}`);
}

describe('SP configuration', () => {
  test('entity id and ACS URL derive from the public base URL and the connection', () => {
    expect(samlSpFor('https://cp.example.test', 'ssoc_1')).toEqual({
      entityId: 'https://cp.example.test/v1/sso/connections/ssoc_1/saml/metadata',
      acsUrl: 'https://cp.example.test/v1/auth/sso/saml/acs',
    });
  });

  test('metadata: EntityDescriptor, SPSSODescriptor wanting signed assertions, POST ACS; samlify reads it', () => {
    const xml = samlMetadataXml(sp);
    expect(samlMetadataXml(sp)).toBe(xml);
    const doc = new DOMParser().parseFromString(xml, 'text/xml');
    const root = doc.documentElement!;
    expect(root.localName).toBe('EntityDescriptor');
    expect(root.namespaceURI).toBe('urn:oasis:names:tc:SAML:2.0:metadata');
    expect(root.getAttribute('entityID')).toBe(sp.entityId);
    const descriptor = root.getElementsByTagName('SPSSODescriptor')[0];
    expect(descriptor.getAttribute('WantAssertionsSigned')).toBe('true');
    expect(descriptor.getAttribute('protocolSupportEnumeration')).toBe('urn:oasis:names:tc:SAML:2.0:protocol');
    const acs = descriptor.getElementsByTagName('AssertionConsumerService')[0];
    expect(acs.getAttribute('Binding')).toBe('urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST');
    expect(acs.getAttribute('Location')).toBe(sp.acsUrl);

    const parsed = samlify.ServiceProvider({ metadata: xml });
    expect(parsed.entityMeta.getEntityID()).toBe(sp.entityId);
    expect(parsed.entityMeta.isWantAssertionsSigned()).toBe(true);
    expect(parsed.entityMeta.getAssertionConsumerService('post')).toBe(sp.acsUrl);
  });

  test('AuthnRequest: HTTP-Redirect to the IdP with RelayState; samlify reads our id, issuer and ACS', async () => {
    const withQuery = new SamlTestIdp({ ssoUrl: 'https://idp.example.test/sso?idpid=C0abc' });
    const { url, requestId } = await samlAuthorizeUrl(withQuery.config(), sp, 'opaque.state-123');
    const parsedUrl = new URL(url);
    expect(parsedUrl.origin + parsedUrl.pathname).toBe('https://idp.example.test/sso');
    expect(parsedUrl.searchParams.get('idpid')).toBe('C0abc');
    expect(parsedUrl.searchParams.get('RelayState')).toBe('opaque.state-123');
    expect(requestId).toMatch(/^_[0-9a-f]{40}$/);
    const request = await withQuery.parseAuthnRequest(url, sp);
    expect(request).toEqual({ requestId, relayState: 'opaque.state-123', acsUrl: sp.acsUrl, issuer: sp.entityId });
    const second = await samlAuthorizeUrl(withQuery.config(), sp, 'x');
    expect(second.requestId).not.toBe(requestId);
  });

  test('certificate check: one PEM certificate only', () => {
    expect(samlCertificateValid(TEST_IDP_KEYS.idp.certificate)).toBe(true);
    expect(samlCertificateValid(TEST_IDP_KEYS.idp.privateKey)).toBe(false);
    expect(samlCertificateValid('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')).toBe(false);
    expect(samlCertificateValid(TEST_IDP_KEYS.idp.certificate + TEST_IDP_KEYS.other.certificate)).toBe(false);
    expect(samlCertificateValid('')).toBe(false);
  });
});

describe('accepted responses', () => {
  test.each(['response', 'assertion', 'both'] as const)('signed %s', async (sign) => {
    const before = Date.now();
    const { samlResponse, requestId, assertionId } = await login(alice, { sign });
    const profile = await verify(samlResponse, requestId);
    expect(profile).toEqual({
      subject: 'alice@corp.example',
      email: 'alice@corp.example',
      groups: [],
      assertionId,
      notOnOrAfter: expect.any(Date),
    });
    expect(profile.notOnOrAfter!.getTime()).toBeGreaterThanOrEqual(before + 5 * MINUTE - 1000);
  });

  test('the earlier of the two NotOnOrAfter bounds is reported (it bounds the replay record)', async () => {
    const now = new Date();
    const subjectEnd = new Date(now.getTime() + 2 * MINUTE);
    const { samlResponse, requestId } = await login(alice, { now, subjectNotOnOrAfter: subjectEnd });
    expect((await verify(samlResponse, requestId)).notOnOrAfter!.getTime()).toBe(Math.floor(subjectEnd.getTime()));
  });

  test('e-mail from an emailAddress NameID wins over attributes', async () => {
    const user = { nameId: 'bob@corp.example', attributes: { email: 'other@corp.example' } };
    const { samlResponse, requestId } = await login(user);
    expect((await verify(samlResponse, requestId)).email).toBe('bob@corp.example');
  });

  test.each([['email'], [ATTR_EMAIL_CLAIM]])('e-mail from attribute %s when the NameID is not an e-mail', async (name) => {
    const user = { nameId: 'AAF23-opaque-id', nameIdFormat: NAMEID_PERSISTENT, attributes: { [name]: 'carol@corp.example' } };
    const { samlResponse, requestId } = await login(user, { sign: 'assertion' });
    const profile = await verify(samlResponse, requestId);
    expect(profile.subject).toBe('AAF23-opaque-id');
    expect(profile.email).toBe('carol@corp.example');
  });

  test('no e-mail: null (persistent NameID, no e-mail attribute, or a value that is not an address)', async () => {
    const none = await login({ nameId: 'opaque-1', nameIdFormat: NAMEID_PERSISTENT, attributes: { name: 'Dana' } });
    expect((await verify(none.samlResponse, none.requestId)).email).toBeNull();
    const junk = await login({ nameId: 'opaque-2', nameIdFormat: NAMEID_PERSISTENT, attributes: { email: 'not an address' } });
    expect((await verify(junk.samlResponse, junk.requestId)).email).toBeNull();
  });

  test.each([
    ['groups', ['engineering', 'admins'], ['engineering', 'admins']],
    ['groups', 'solo', ['solo']],
    [ATTR_GROUPS_CLAIM, ['5f1c0d3e-aaaa', '77ab-bbbb'], ['5f1c0d3e-aaaa', '77ab-bbbb']],
    [ATTR_GROUPS_CLAIM, 'only-one', ['only-one']],
  ])('groups from %s (%j)', async (name, value, expected) => {
    const { samlResponse, requestId } = await login({ ...alice, attributes: { [name]: value } });
    expect((await verify(samlResponse, requestId)).groups).toEqual(expected);
  });

  test('groups from both attribute names are merged without duplicates', async () => {
    const attributes = { groups: ['a', 'b'], [ATTR_GROUPS_CLAIM]: ['b', 'c'] };
    const { samlResponse, requestId } = await login({ ...alice, attributes });
    expect((await verify(samlResponse, requestId)).groups).toEqual(['a', 'b', 'c']);
  });

  test('clock skew: 60 s either way is tolerated, not more', async () => {
    const now = new Date();
    const { samlResponse, requestId } = await login(alice, { now, notBefore: now });
    const at = (ms: number) => verify(samlResponse, requestId, new Date(now.getTime() + ms));
    await expect(at(-50_000)).resolves.toBeTruthy();
    await expect(at(5 * MINUTE + 50_000)).resolves.toBeTruthy();
    await expectRejected(at(-70_000), 'not_yet_valid');
    await expectRejected(at(5 * MINUTE + 70_000), 'expired');
  });

  test('peekSamlInResponseTo reads the request id without trusting it; null for junk', async () => {
    const { samlResponse, requestId } = await login();
    expect(peekSamlInResponseTo(samlResponse)).toBe(requestId);
    expect(peekSamlInResponseTo('%%%')).toBeNull();
    expect(peekSamlInResponseTo(toBase64('<a/>'))).toBeNull();
  });
});

describe('refused responses', () => {
  test.each(['response', 'assertion', 'both'] as const)('NameID edited after signing (signed %s)', async (sign) => {
    const { xml, requestId } = await login(alice, { sign });
    await expectRejected(verify(editNameId(xml, 'mallory@corp.example'), requestId), 'invalid_signature');
  });

  const assertionWrapping: WrappingAttack[] = ['sibling', 'extensions', 'extensions-copied-signature', 'same-id', 'advice'];
  test.each(assertionWrapping)('signature wrapping of a signed assertion: %s', async (attack) => {
    const { xml, requestId } = await login(alice, { sign: 'assertion' });
    await expectRejected(verify(wrapSignature(xml, attack, 'mallory@corp.example'), requestId), 'invalid_signature');
  });

  test.each(['response', 'sibling', 'extensions', 'advice'] as WrappingAttack[])(
    'signature wrapping of a signed response: %s',
    async (attack) => {
      const { xml, requestId } = await login(alice, { sign: 'response' });
      await expectRejected(verify(wrapSignature(xml, attack, 'mallory@corp.example'), requestId), 'invalid_signature');
    },
  );

  test.each(['response', 'assertion', 'both'] as const)('signed (%s) by another key with its certificate in KeyInfo', async (sign) => {
    const { xml, samlResponse, requestId } = await login(alice, { sign, signWithOtherKey: true });
    const otherCertBody = TEST_IDP_KEYS.other.certificate.split('\n').slice(1, 3).join('');
    expect(xml.replace(/\s/g, '')).toContain(otherCertBody);
    await expectRejected(verify(samlResponse, requestId), 'invalid_signature');
  });

  test('unsigned response, and a signed one with its signatures stripped', async () => {
    const unsigned = await login(alice, { sign: 'none' });
    await expectRejected(verify(unsigned.samlResponse, unsigned.requestId), 'invalid_signature');
    const signed = await login(alice, { sign: 'both' });
    await expectRejected(verify(stripSignatures(signed.xml), signed.requestId), 'invalid_signature');
  });

  test('wrong Audience', async () => {
    const { samlResponse, requestId } = await login(alice, { audience: 'https://other-sp.example.test/metadata' });
    await expectRejected(verify(samlResponse, requestId), 'audience_mismatch');
  });

  test('a response for another connection of ours (its entity id as Audience)', async () => {
    const other = samlSpFor('https://cp.example.test', 'ssoc_other');
    const { samlResponse, requestId } = await login(alice, { audience: other.entityId });
    await expectRejected(verify(samlResponse, requestId), 'audience_mismatch');
  });

  test('wrong Destination, and wrong Recipient in the signed assertion', async () => {
    for (const sign of ['response', 'assertion'] as const) {
      const destination = await login(alice, { sign, destination: 'https://evil.example.test/acs' });
      await expectRejected(verify(destination.samlResponse, destination.requestId), 'destination_mismatch');
      const recipient = await login(alice, { sign, recipient: 'https://evil.example.test/acs' });
      await expectRejected(verify(recipient.samlResponse, recipient.requestId), 'destination_mismatch');
    }
  });

  test('wrong InResponseTo: another request id expected, a forged Response attribute, a signed mismatch', async () => {
    const { samlResponse } = await login();
    await expectRejected(verify(samlResponse, '_someotherrequest'), 'in_response_to_mismatch');
    await expectRejected(verify(samlResponse, ''), 'in_response_to_mismatch');

    const other = await login(alice, { inResponseTo: '_forged' });
    await expectRejected(verify(other.samlResponse, other.requestId), 'in_response_to_mismatch');

    // Only the assertion signed: the Response attribute says the right id, the signed one does not.
    const subject = await login(alice, { sign: 'assertion', subjectInResponseTo: '_another' });
    await expectRejected(verify(subject.samlResponse, subject.requestId), 'in_response_to_mismatch');
  });

  test('expired: its own timestamps, or judged at a later expected.now', async () => {
    const past = new Date(Date.now() - 20 * MINUTE);
    const old = await login(alice, { now: past });
    await expectRejected(verify(old.samlResponse, old.requestId), 'expired');

    const fresh = await login();
    await expectRejected(verify(fresh.samlResponse, fresh.requestId, new Date(Date.now() + 7 * MINUTE)), 'expired');

    const conditionsOnly = await login(alice, { notOnOrAfter: new Date(Date.now() - 2 * MINUTE), subjectNotOnOrAfter: new Date(Date.now() + MINUTE) });
    await expectRejected(verify(conditionsOnly.samlResponse, conditionsOnly.requestId), 'expired');
  });

  test('not yet valid: its own NotBefore, or judged at an earlier expected.now', async () => {
    const future = await login(alice, { notBefore: new Date(Date.now() + 10 * MINUTE), notOnOrAfter: new Date(Date.now() + 20 * MINUTE) });
    await expectRejected(verify(future.samlResponse, future.requestId), 'not_yet_valid');

    const fresh = await login();
    // The IdP's NotBefore is 5 minutes before it issued the response (as Entra ID and Okta do).
    await expectRejected(verify(fresh.samlResponse, fresh.requestId, new Date(Date.now() - 7 * MINUTE)), 'not_yet_valid');
  });

  test('another issuer signing with the configured key', async () => {
    const { samlResponse, requestId } = await login(alice, { issuer: 'https://impostor.example.test' });
    await expectRejected(verify(samlResponse, requestId), 'issuer_mismatch');
  });

  test('an error status from the IdP', async () => {
    const { samlResponse, requestId } = await login(alice, { statusCode: 'urn:oasis:names:tc:SAML:2.0:status:Requester' });
    await expectRejected(verify(samlResponse, requestId), 'idp_error');
  });

  test('a connection whose certificate cannot be read', async () => {
    const { samlResponse, requestId } = await login();
    const broken = { ...idp.config(), idpCertificate: 'not a certificate' };
    await expectRejected(verifySamlResponse(broken, sp, samlResponse, { requestId, now: new Date() }), 'invalid_idp_certificate');
  });

  test.each([
    ['empty', ''],
    ['not base64', 'this is <not> base64 at all!'],
    ['base64 junk', Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37) % 256)).toString('base64')],
    ['base64 of text', toBase64('hello world')],
    ['truncated XML', toBase64('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="x"><saml:Iss')],
    ['another root element', toBase64('<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="x"/>')],
    ['a Response in no namespace', toBase64('<Response ID="x"/>')],
    ['far too large', 'A'.repeat(1_000_004)],
  ])('malformed input: %s', async (_name, input) => {
    await expectRejected(verify(input, '_req'), 'malformed_response');
  });

  test('XML with a DOCTYPE (XXE, entity expansion) is refused before parsing', async () => {
    const { xml, requestId } = await login();
    const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${xml.replace('alice@corp.example', '&xxe;')}`;
    await expectRejected(verify(toBase64(xxe), requestId), 'malformed_response');
    const bomb = `<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>${xml}`;
    await expectRejected(verify(toBase64(bomb), requestId), 'malformed_response');
  });

  test('the same response checked against each forged variant still verifies as itself (tamper helpers are honest)', async () => {
    const { xml, samlResponse, requestId } = await login(alice, { sign: 'assertion' });
    expect(toBase64(xml)).toBe(samlResponse);
    await expect(verify(samlResponse, requestId)).resolves.toMatchObject({ subject: 'alice@corp.example' });
  });
});

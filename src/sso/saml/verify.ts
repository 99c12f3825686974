import type { CacheProvider, SAML } from '@node-saml/node-saml';
import { checkSignedAssertion } from './assertion';
import { decodeSamlResponse, isSuccess, parseXml, readEnvelope } from './document';
import { SamlRejected, type SamlRejectReason } from './rejected';
import { samlCertificateValid } from './certificate';
import type { SamlIdpConfig, SamlProfile, SamlSpConfig } from './types';
import { nodeSaml } from './sp';

/**
 * Verifies a posted SAMLResponse (HTTP-POST binding) for one expected AuthnRequest.
 *
 * node-saml does the cryptography: the signature of the Response or of its (single) Assertion
 * must verify with `idpCert` = the connection's certificate. xml-crypto 6 ignores certificates in
 * the message's KeyInfo unless told otherwise (node-saml does not), and node-saml refuses more than
 * one assertion and signatures whose reference is not their parent element (wrapping).
 * It hands back the signed assertion; every claim is then read and checked from that (./assertion).
 *
 * What node-saml is NOT trusted with:
 * - time: it reads the process clock, we check against `expected.now`, so its own timestamp
 *   checks are off (acceptedClockSkewMs -1) and ./assertion applies SAML_CLOCK_SKEW_MS (60 s);
 * - InResponseTo: its default cache is per process (the service runs several), so it gets a cache
 *   that knows only `expected.requestId`, and the id is compared again here;
 * - Destination: it does not check it at all.
 */
export async function verifySamlResponse(
  idp: SamlIdpConfig,
  sp: SamlSpConfig,
  samlResponseBase64: string,
  expected: { requestId: string; now: Date },
): Promise<SamlProfile> {
  const xml = decodeSamlResponse(samlResponseBase64);
  const envelope = readEnvelope(parseXml(xml));
  if (!isSuccess(envelope)) throw new SamlRejected('idp_error');
  if (envelope.destination !== sp.acsUrl) throw new SamlRejected('destination_mismatch');
  if (!expected.requestId || envelope.inResponseTo !== expected.requestId) {
    throw new SamlRejected('in_response_to_mismatch');
  }

  const saml = verifier(idp, sp, expected.requestId);
  let signedAssertionXml: string;
  try {
    const { profile } = await saml.validatePostResponseAsync({ SAMLResponse: samlResponseBase64 });
    const assertionXml = profile?.getAssertionXml?.();
    if (!assertionXml) throw new SamlRejected('invalid_response');
    signedAssertionXml = assertionXml;
  } catch (err) {
    throw err instanceof SamlRejected ? err : new SamlRejected(reasonFor(err));
  }

  return checkSignedAssertion(signedAssertionXml, {
    idpEntityId: idp.idpEntityId,
    audience: sp.entityId,
    recipient: sp.acsUrl,
    requestId: expected.requestId,
    now: expected.now,
  });
}

function verifier(idp: SamlIdpConfig, sp: SamlSpConfig, requestId: string): SAML {
  if (!samlCertificateValid(idp.idpCertificate)) throw new SamlRejected('invalid_idp_certificate');
  const { SAML, ValidateInResponseTo } = nodeSaml();
  try {
    return new SAML({
      idpCert: idp.idpCertificate,
      issuer: sp.entityId,
      audience: sp.entityId,
      callbackUrl: sp.acsUrl,
      // Either a signed Response or a signed Assertion is enough (docs/sso.md#signing-in); node-saml then still
      // requires the assertion's own signature whenever the Response is not validly signed.
      wantAuthnResponseSigned: false,
      wantAssertionsSigned: false,
      acceptedClockSkewMs: -1,
      validateInResponseTo: ValidateInResponseTo.always,
      cacheProvider: onlyRequest(requestId),
    });
  } catch {
    throw new SamlRejected('invalid_idp_certificate');
  }
}

/** A node-saml cache that knows exactly one outstanding request id, and forgets nothing else. */
function onlyRequest(requestId: string): CacheProvider {
  return {
    saveAsync: async () => null,
    // The instant is "now" so node-saml's own 8-hour request expiry never decides; the login
    // state that holds the request id carries its own, shorter, expiry.
    getAsync: async (key) => (key === requestId ? new Date().toISOString() : null),
    removeAsync: async () => null,
  };
}

/** node-saml's error messages → stable reasons (the messages themselves never leave this file). */
function reasonFor(err: unknown): SamlRejectReason {
  const message = err instanceof Error ? err.message : '';
  if (/signature|signed|multiple assertions|ID cannot refer|Referenced node|transforms/i.test(message)) {
    return 'invalid_signature';
  }
  if (/InResponseTo/i.test(message)) return 'in_response_to_mismatch';
  if (/audience/i.test(message)) return 'audience_mismatch';
  if (/not yet valid/i.test(message)) return 'not_yet_valid';
  if (/expired/i.test(message)) return 'expired';
  if (/SAML provider returned/i.test(message)) return 'idp_error';
  if (/not a valid XML|Missing SAML assertion|Unknown SAML response/i.test(message)) return 'malformed_response';
  return 'invalid_response';
}

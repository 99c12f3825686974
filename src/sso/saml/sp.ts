import { createHash, randomBytes } from 'node:crypto';
import type { SamlIdpConfig, SamlSpConfig } from './types';
import { lazy } from '../../lib/lazy';

// node-saml and its XML stack (xml-crypto, xpath, xml2js, xmlbuilder: ~3 MB of heap) load on the
// first SAML request, not at start: most processes never serve one (src/lib/lazy.ts).
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const nodeSaml = lazy(() => require('@node-saml/node-saml') as typeof import('@node-saml/node-saml'));

/** The service provider side of one connection: its entity id and the shared ACS URL. */
export function samlSpFor(publicBaseUrl: string, connectionId: string): SamlSpConfig {
  const base = publicBaseUrl.replace(/\/+$/, '');
  return {
    entityId: `${base}/v1/sso/connections/${encodeURIComponent(connectionId)}/saml/metadata`,
    acsUrl: `${base}/v1/auth/sso/saml/acs`,
  };
}

const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

/**
 * SP metadata: EntityDescriptor / SPSSODescriptor (WantAssertionsSigned, AuthnRequestsSigned
 * false) with the HTTP-POST AssertionConsumerService. Its ID is derived from the entity id so the
 * same connection always yields the same document.
 */
export function samlMetadataXml(sp: SamlSpConfig): string {
  return nodeSaml().generateServiceProviderMetadata({
    issuer: sp.entityId,
    callbackUrl: sp.acsUrl,
    wantAssertionsSigned: true,
    // A hint to administrators; the AuthnRequest itself does not insist on a format.
    identifierFormat: EMAIL_FORMAT,
    generateUniqueId: () => `_${createHash('sha256').update(sp.entityId).digest('hex').slice(0, 40)}`,
  });
}

/**
 * An AuthnRequest for the HTTP-Redirect binding (deflated, base64, in the query of idpSsoUrl)
 * with RelayState. The caller stores `requestId` with the login state: the response must answer it.
 */
export async function samlAuthorizeUrl(
  idp: SamlIdpConfig,
  sp: SamlSpConfig,
  relayState: string,
): Promise<{ url: string; requestId: string }> {
  // An xs:ID must start with a letter or underscore.
  const requestId = `_${randomBytes(20).toString('hex')}`;
  const { SAML, ValidateInResponseTo } = nodeSaml();
  const saml = new SAML({
    entryPoint: idp.idpSsoUrl,
    issuer: sp.entityId,
    callbackUrl: sp.acsUrl,
    idpCert: idp.idpCertificate || 'unused-for-requests',
    generateUniqueId: () => requestId,
    // No NameIDPolicy Format and no RequestedAuthnContext: both make Entra ID / Okta refuse
    // logins that do not match exactly (e.g. passwordless or MFA sign-ins), and we need neither.
    identifierFormat: null,
    disableRequestedAuthnContext: true,
    // Nothing is remembered in process: the caller keeps requestId with its login state.
    validateInResponseTo: ValidateInResponseTo.never,
    cacheProvider: { saveAsync: async () => null, getAsync: async () => null, removeAsync: async () => null },
  });
  const url = await saml.getAuthorizeUrlAsync(relayState, undefined, {});
  return { url, requestId };
}

/**
 * SAML 2.0 service provider for SSO connections (docs/sso.md#signing-in), on @node-saml/node-saml.
 * The HTTP routes (start, ACS, metadata) live with the SSO routes; this module holds no state:
 * the request id and the replay record of assertion ids are kept by the caller.
 */
export type { SamlIdpConfig, SamlProfile, SamlSpConfig } from './types';
export { samlAuthorizeUrl, samlMetadataXml, samlSpFor } from './sp';
export { verifySamlResponse } from './verify';
export { SamlRejected, type SamlRejectReason } from './rejected';
export { peekSamlInResponseTo } from './document';
export { samlCertificateValid } from './certificate';
export { SAML_CLOCK_SKEW_MS } from './assertion';

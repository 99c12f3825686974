/** The SAML module's contract types (fixed in the SSO plan; sso-signin codes against them). */
export interface SamlIdpConfig {
  idpEntityId: string;
  idpSsoUrl: string;
  idpCertificate: string;
}

export interface SamlSpConfig {
  entityId: string;
  acsUrl: string;
}

export interface SamlProfile {
  subject: string;
  email: string | null;
  groups: string[];
  assertionId: string;
  notOnOrAfter: Date | null;
}

/**
 * The service's own SSO URLs, from PUBLIC_BASE_URL: what an administrator registers at the
 * identity provider. The SAML entity id is the connection's metadata URL (as the SAML module's
 * `samlSpFor` computes it).
 */
export interface SsoUrls {
  oidcRedirectUri: string;
  samlEntityId: string;
  samlAcsUrl: string;
}

export function ssoUrls(publicBaseUrl: string, connectionId: string): SsoUrls {
  const base = publicBaseUrl.replace(/\/+$/, '');
  return {
    oidcRedirectUri: `${base}/v1/auth/sso/oidc/callback`,
    samlEntityId: `${base}/v1/sso/connections/${connectionId}/saml/metadata`,
    samlAcsUrl: `${base}/v1/auth/sso/saml/acs`,
  };
}

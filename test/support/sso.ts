import type { TestApp } from './app';
import { createOrganization, type OrgOwner } from './factories';

/** A self-signed certificate standing in for an identity provider's signing certificate. */
export const IDP_CERTIFICATE = `-----BEGIN CERTIFICATE-----
MIIDFzCCAf+gAwIBAgIUbSIsu7bHWOPGXk2C3k9G3HBFQdAwDQYJKoZIhvcNAQEL
BQAwGzEZMBcGA1UEAwwQaWRwLmV4YW1wbGUudGVzdDAeFw0yNjExMjMwNDM5Mzda
Fw0zNjExMjAwNDM5MzdaMBsxGTAXBgNVBAMMEGlkcC5leGFtcGxlLnRlc3QwggEi
MA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQCcftuy6qfGkhvhzcxAInXHv5fv
YorX3Q4TW6ENbAaec/s61hVbHdaoUyyLzAsmgPt0pHsHpndcMOoeRjHJCKbBs31t
/bnkz+UR2AlefNtseV+LBI2eNc95A0wBpp0svBvQA/vLCfinql2T+2fdwoMudeUJ
8LKUUeBlw32k+rGxCYMeIQeb5FBTEitnUyetxHbOjOIyyJ71+5dFQ2Hna3pPMEsh
ToB0UqTch/lJFR+EfCkd6gyn3DryW8nsa+q6DytrW7ATbTCb5D8TXGzDZTiNOhlQ
3oUcRMlYC5VBOJbU9m01B7Xn97EEnZwMfKL3GG2Nix2Y2UB6w45CcTqzFcafAgMB
AAGjUzBRMB0GA1UdDgQWBBTIAynWGiMksyII5Aq38hSjUk0hojAfBgNVHSMEGDAW
gBTIAynWGiMksyII5Aq38hSjUk0hojAPBgNVHRMBAf8EBTADAQH/MA0GCSqGSIb3
DQEBCwUAA4IBAQATH09RoWVYs2GEZvf9Ku/L36UBkO07iELiAdsALS07qEC59KsL
DNpPohyeXXxjBB/OSs5tN/KmWc0smEqjOaqHdFVjOYeenK8IHdDtrsjnx26w51Ls
wL3IQrBQWgi4i19pJkWQz6u11gFp3x8pWCO0K534F/dl7rSOcnS4WLRapdBrAaU4
0uRKwP1aDL/F5VdoND0j1RLvvtOQgql6YNAbA+ypQYrDbEhtVJCa/qtKoMgHOwE/
yYF11CgABBFooLio3Adv6zgJNTQquLtgahfUBzzzUu35TBKbdkZly5M3fgX62GVY
5jmKwGQW46wmpKeTBEoWRiuPHsrQw4PIkzN1
-----END CERTIFICATE-----
`;

/** An organization on the enterprise plan (feature `sso`); its owner's session is fresh. */
export async function enterpriseOrganization(t: TestApp, name = 'SSO Org'): Promise<OrgOwner> {
  const owner = await createOrganization(t, name);
  await t.db.updateTable('organizations').set({ plan: 'enterprise' }).where('id', '=', owner.organizationId).execute();
  return owner;
}

export const OIDC_CONNECTION = {
  type: 'oidc',
  name: 'Entra ID',
  issuer: 'https://login.example.test/tenant/v2.0',
  clientId: 'client-123',
  clientSecret: 'oidc-client-secret-do-not-leak-0123456789',
} as const;

export const SAML_CONNECTION = {
  type: 'saml',
  name: 'Okta SAML',
  idpEntityId: 'http://www.okta.com/exk123',
  idpSsoUrl: 'https://example.okta.test/app/sso/saml',
  idpCertificate: IDP_CERTIFICATE,
} as const;

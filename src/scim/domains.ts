import type { Db } from '../db/schema';

/**
 * Whether the e-mail's domain is verified by the organization (SSO domains, enterprise-identity
 * §2). Linking an existing account to a SCIM-provisioned member, and changing a member's e-mail
 * through SCIM, both need it. SSO domains do not exist yet, so no domain is verified: this is the
 * one function the SSO work fills in (a lookup of the organization's verified domains).
 */
export async function emailDomainVerified(_db: Db, _organizationId: string, _email: string): Promise<boolean> {
  return false;
}

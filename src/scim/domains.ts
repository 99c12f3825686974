import type { Db } from '../db/schema';
import { emailDomainVerified as verified } from '../sso/domains';

/**
 * Whether the e-mail's domain is verified by the organization (SSO domains,
 * docs/sso.md#setting-it-up). Linking an existing account to a SCIM-provisioned member, and changing a member's e-mail
 * through SCIM, both need it.
 */
export async function emailDomainVerified(db: Db, organizationId: string, email: string): Promise<boolean> {
  return verified(db, organizationId, email);
}

import type { Principal } from '../domain/principal';

/**
 * The principal an access token becomes, whoever it names (a member, a service account, or a
 * worker acting with its creator's membership): a token is never a session, carries no second
 * factor or SSO state, and never platform administration (a person's, from a session).
 */
export function accessTokenPrincipal(who: {
  userId: string | null;
  serviceAccountId: string | null;
  clientId: string;
  organizationId: string;
  memberId: string;
  role: string;
  permissions: Set<string>;
}): Principal {
  return {
    kind: 'accessToken',
    userId: who.userId,
    serviceAccountId: who.serviceAccountId,
    clientId: who.clientId,
    sessionId: null,
    apiKeyId: null,
    isPlatformAdmin: false,
    activeOrganizationId: who.organizationId,
    authenticatedAt: null,
    authMethod: null,
    ssoConnectionId: null,
    mfaMissing: false,
    ssoMissing: false,
    emailUnverified: false,
    membership: { organizationId: who.organizationId, memberId: who.memberId, role: who.role, permissions: who.permissions },
  };
}

import type { Db } from '../db/schema';
import type { Cursors } from '../lib/pagination';

/**
 * Who is calling, as every layer below HTTP sees it. Credentials (session, API key, worker token;
 * SCIM token and SSO session next) become one of these in src/principal/, the only place that
 * reads a credential; services decide with src/access/ what the principal may do.
 */

/** The built-in organization roles. */
export type BuiltInRole = 'owner' | 'admin' | 'member';

/** A role of an organization, by key: a built-in one or a custom role (`GET /v1/roles`). */
export type Role = string;

/** Permission keys (`area.verb`) a membership holds; the catalogue is src/access/permissions.ts. */
export type PermissionSet = ReadonlySet<string>;

export interface Membership {
  organizationId: string;
  memberId: string;
  role: Role;
  /**
   * What this caller may do in the organization, resolved with the principal in the same query
   * (no extra round trip, nothing cached beyond the request): the role's permissions, narrowed by
   * an API key's scope. Read through src/access only.
   */
  permissions: PermissionSet;
  /**
   * A worker's own access token acting with its creator's membership
   * (docs/workers-and-usage.md#workers-as-oauth-clients): it has the creator's permissions
   * (narrowed), never the creator's own standing as a person: it is not the creator of what they
   * made, nor the member `GET /v1/org` describes. Absent for every other credential.
   */
  borrowed?: true;
}

/**
 * A member's credential: a user's session or API key, a service account's API key (a member with
 * no user: docs/service-accounts.md), or an OAuth access token acting as either
 * (docs/oauth.md#access-tokens-at-the-api). Account routes (the caller's own user) need `userId`.
 */
export interface Principal {
  kind: 'session' | 'apiKey' | 'accessToken';
  /** The calling user; null for a service account, which has no user, e-mail, password or session. */
  userId: string | null;
  /** The service account acting (its member is `membership.memberId`); null for a user. */
  serviceAccountId: string | null;
  sessionId: string | null;
  apiKeyId: string | null;
  /** The OAuth client an access token was issued to (a service account's own id for its client credentials); absent otherwise. */
  clientId?: string;
  /**
   * A worker acting through an OAuth token (docs/workers-and-usage.md#workers-as-oauth-clients):
   * its own token (`delegated: false`; no member of its own, so `membership` is its creator's,
   * narrowed by its ceiling), or the actor of a token exchanged for the member of `membership`
   * (`delegated: true`, the token's `act`). Absent for every other credential.
   */
  worker?: { id: string; delegated: boolean };
  isPlatformAdmin: boolean;
  /** The active organization's membership; null when the session has none (or it was removed). */
  membership: Membership | null;
  /** The session's active organization id, even when the membership is gone. */
  activeOrganizationId: string | null;
  /** When the session last proved its user (sign-in, reauthentication); null for an API key. */
  authenticatedAt: Date | null;
  /**
   * How the session was opened: 'sso' for a session an SSO sign-in created (invitation acceptance
   * to an enforced domain needs one), 'password', 'reset' or 'invitation' otherwise; null for an API key.
   */
  authMethod: SessionAuthMethod | null;
  /** The SSO connection a session was opened through (null otherwise, or once it is deleted). */
  ssoConnectionId: string | null;
  /**
   * The active organization requires a second factor (`requireMfa`) and this session has none: a
   * password session without one, not made through the organization's own SSO. Such a session
   * reaches only `/v1/me…` and `/v1/auth/…` (src/access/session-gates.ts). For an API key: the
   * organization requires one and the key's owner, a person, holds none (the key reaches nothing
   * there); never for a service account's key.
   */
  mfaMissing: boolean;
  /**
   * The active organization enforces SSO and this session was not made through one of its own
   * connections (a password session, or SSO through another organization's), and the member is
   * not its owner (break-glass). Such a session reaches only `/v1/me…`, `/v1/auth/…` and what is
   * not the organization's (src/access/session-gates.ts). False for an API key.
   */
  ssoMissing: boolean;
  /**
   * The user's address is not proven yet. While EMAIL_VERIFICATION is `required` such a session
   * reaches only its account routes (src/access/session-gates.ts). False for an API key (an
   * unverified user never makes one).
   */
  emailUnverified: boolean;
  /**
   * The session's active organization is scheduled for deletion (docs/organization-deletion.md#deletion):
   * its routes answer 403 `organization_deleted`, except the owner's exports and restore
   * (src/access/session-gates.ts). Other credentials of such an organization answer 401; absent for them.
   */
  organizationDeleted?: boolean;
}

/** How a session was opened (`sessions.auth_method`). */
export type SessionAuthMethod = 'password' | 'sso' | 'reset' | 'invitation';

/** A worker calling with its own host token (`x-worker-token`). */
export interface WorkerPrincipal {
  kind: 'worker';
  workerId: string;
  organizationId: string;
}

/**
 * A worker token not yet checked: on operations that verify it in their own statement (the
 * heartbeat, see `deferredCredentials` in src/server/registry.ts) the security handler only hashes
 * it. Nothing may trust it: `workerOf` refuses it, and the operation answers 401 when its
 * statement finds no worker with this id and hash.
 */
export interface WorkerTokenClaim {
  kind: 'workerClaim';
  tokenHash: string;
}

/** An organization's identity provider calling /scim/v2 with a SCIM token. */
export interface ScimPrincipal {
  kind: 'scim';
  scimTokenId: string;
  organizationId: string;
  /** The member who created the token (null once that member's row is gone). */
  createdByMemberId: string | null;
}

/** Any authenticated caller; new credential kinds join this union. */
export type AnyPrincipal = Principal | WorkerPrincipal | WorkerTokenClaim | ScimPrincipal;

/**
 * The credential belongs to a service account (its API key; its OAuth token next), not to a
 * person: no user, no second factor, no session. Rules about a person's own credentials (account
 * routes, requireMfa on a member's keys) read this, not `userId`.
 */
export function actsAsServiceAccount(principal: Principal): boolean {
  return principal.serviceAccountId !== null;
}

export function isUserPrincipal(principal: AnyPrincipal): principal is Principal {
  return principal.kind === 'session' || principal.kind === 'apiKey' || principal.kind === 'accessToken';
}

/**
 * A session check that reads its operation's data in the same query (one round trip): an area
 * declares it beside its handler (src/contract `SessionLoaders`), src/principal calls it for the
 * `bearerAuth` scheme instead of the plain session check.
 */
export type SessionLoader = (db: Db, token: string, now: Date, request: LoaderRequest) => Promise<Principal | null>;

/**
 * An access token's check that reads its operation's data in the same statement, as a session
 * loader does for a session: null when the bearer value is no JWT; throws the token's 401 as the
 * plain check does (src/principal/access-token.ts).
 */
export type AccessTokenLoader = (db: Db, token: string, now: Date, publicBaseUrl: string) => Promise<Principal | null>;

/** What a session loader may read of the request: its query as sent (not yet validated). */
export interface LoaderRequest {
  query: Record<string, unknown>;
  /** The service's cursor codec, to read a page cursor the query carries (absent: not read). */
  cursors?: Cursors;
}

import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/schema';
import type { Principal, SessionAuthMethod } from '../domain/principal';
import { preparedAs } from '../db/connect';
import { sha256Hex } from '../lib/crypto';
import { touchSession } from '../users/service';
import { membershipOf } from './membership';
import { organizationUnlocked } from './organization-lock';

/**
 * Data an operation reads in the same round trip as its session check (GET /v1/org): extra
 * columns and joins added to the one session query. They may use `s` (session), `u` (its user)
 * and `m` (the membership in the active organization, null when none).
 */
export interface SessionPreload<T> {
  /** Name of the prepared statement (one per preload). */
  name: string;
  columns: RawBuilder<unknown>;
  joins: RawBuilder<unknown>;
  read(row: Record<string, unknown>): T | undefined;
}

interface SessionColumns {
  session_id: string;
  session_user_id: string;
  active_organization_id: string | null;
  is_platform_admin: boolean;
  authenticated_at: Date;
  last_used_at: Date | null;
  auth_method: SessionAuthMethod;
  sso_connection_id: string | null;
  mfa_missing: boolean | null;
  sso_missing: boolean | null;
  email_unverified: boolean;
  principal_member_id: string | null;
  principal_role: string | null;
  principal_role_built_in: boolean | null;
  principal_role_permissions: string[] | null;
  organization_deleted: boolean | null;
}

/**
 * The one definition of a live session: its token hash matches, it is not revoked or expired;
 * its membership counts only in the session's active organization and only while not removed or
 * suspended (a member SCIM set `active: false` keeps the session, which no longer reaches the organization).
 * What the organization requires of the session and it lacks (a second factor, its own SSO) is
 * read here too, so enforcement applies from the next request (src/access/session-gates.ts).
 * Every session check (every request with a session, and GET /v1/org's preload) runs this query.
 * The membership's role row comes along, so permission checks need no other round trip.
 */
function sessionQuery(tokenHash: string, now: Date, preload?: SessionPreload<unknown>) {
  return sql<SessionColumns & Record<string, unknown>>`${preparedAs(preload ? `session_${preload.name}` : 'session_principal')}
    SELECT s.id AS session_id, s.user_id AS session_user_id, s.active_organization_id, u.is_platform_admin, s.authenticated_at, s.last_used_at, s.auth_method, s.sso_connection_id,
      (m.id IS NOT NULL AND s.second_factor IS NULL
        AND EXISTS (SELECT 1 FROM organization_auth_policies ap WHERE ap.organization_id = m.organization_id AND ap.require_mfa)
        AND NOT (s.auth_method = 'sso' AND EXISTS (SELECT 1 FROM sso_connections sc WHERE sc.id = s.sso_connection_id AND sc.organization_id = m.organization_id))) AS mfa_missing,
      (m.id IS NOT NULL AND m.role <> 'owner'
        AND EXISTS (SELECT 1 FROM organizations so WHERE so.id = m.organization_id AND so.sso_enforced)
        AND NOT (s.auth_method = 'sso' AND EXISTS (SELECT 1 FROM sso_connections sc WHERE sc.id = s.sso_connection_id AND sc.organization_id = m.organization_id))) AS sso_missing,
      u.email_verified_at IS NULL AS email_unverified,
      (m.id IS NOT NULL AND NOT ${organizationUnlocked('m.organization_id')}) AS organization_deleted,
      m.id AS principal_member_id, m.role AS principal_role, pr.built_in AS principal_role_built_in,
      pr.permissions AS principal_role_permissions ${preload ? sql`, ${preload.columns}` : sql``}
    FROM sessions s
    JOIN users u ON u.id = s.user_id
    LEFT JOIN members m ON m.organization_id = s.active_organization_id AND m.user_id = s.user_id AND m.removed_at IS NULL AND m.suspended_at IS NULL
    LEFT JOIN organization_roles pr ON pr.organization_id = m.organization_id AND pr.key = m.role
    ${preload ? preload.joins : sql``}
    WHERE s.token_hash = ${tokenHash} AND s.revoked_at IS NULL AND s.expires_at > ${now}`;
}

/**
 * The session statement's SQL text, compiled on its first use and kept by statement name (one
 * name, one text: ./named-statements in src/db), so a request binds its two values to a constant
 * text instead of building and compiling the statement's ~3 KB of SQL (with the statement-name
 * cache of src/db/named-statements.ts: bench scenario 1 at 50 members, service CPU per request
 * 0.272 against 0.295 ms, median of 12 alternating rounds in one run, -8 %). A preload whose joins
 * carry values of their own (a members page after a cursor) is compiled per request, as any other query.
 */
const compiledTexts = new Map<string, string | null>();

function runSessionQuery(db: Db, tokenHash: string, now: Date, preload?: SessionPreload<unknown>) {
  const name = preload?.name ?? '';
  const text = compiledTexts.get(name);
  if (text) return db.executeQuery<SessionColumns & Record<string, unknown>>(CompiledQuery.raw(text, [tokenHash, now]));
  const query = sessionQuery(tokenHash, now, preload);
  if (text === undefined) {
    const compiled = query.compile(db);
    // Only the token hash and the time as values: the text is the same for every request.
    compiledTexts.set(name, compiled.parameters.length === 2 && compiled.parameters[0] === tokenHash && compiled.parameters[1] === now ? compiled.sql : null);
  }
  return query.execute(db);
}

function toPrincipal(row: SessionColumns): Principal {
  return {
    kind: 'session',
    userId: row.session_user_id,
    serviceAccountId: null,
    sessionId: row.session_id,
    apiKeyId: null,
    isPlatformAdmin: row.is_platform_admin,
    activeOrganizationId: row.active_organization_id,
    authenticatedAt: row.authenticated_at,
    authMethod: row.auth_method,
    ssoConnectionId: row.sso_connection_id,
    mfaMissing: row.mfa_missing === true,
    ssoMissing: row.sso_missing === true,
    emailUnverified: row.email_unverified === true,
    organizationDeleted: row.organization_deleted === true,
    membership:
      row.principal_member_id && row.active_organization_id && row.principal_role
        ? membershipOf({
            organizationId: row.active_organization_id,
            memberId: row.principal_member_id,
            role: row.principal_role,
            roleBuiltIn: row.principal_role_built_in,
            rolePermissions: row.principal_role_permissions,
          })
        : null,
  };
}

/** A session token → who is calling, in one query; null when the session is not live. */
export async function principalFromSession(db: Db, token: string, now: Date): Promise<Principal | null> {
  const row = (await runSessionQuery(db, sha256Hex(token), now)).rows[0];
  if (!row) return null;
  await touchSession(db, row.session_id, row.last_used_at, now);
  return toPrincipal(row);
}

/** The same check, with an operation's data read in the same round trip. */
export async function principalFromSessionWith<T>(
  db: Db,
  token: string,
  now: Date,
  preload: SessionPreload<T>,
): Promise<{ principal: Principal; preloaded: T | undefined } | null> {
  const row = (await runSessionQuery(db, sha256Hex(token), now, preload)).rows[0];
  if (!row) return null;
  await touchSession(db, row.session_id, row.last_used_at, now);
  return { principal: toPrincipal(row), preloaded: preload.read(row) };
}

import type { AppDeps } from '../domain/deps';
import type { Principal } from '../domain/principal';
import { NotFound } from '../lib/errors';
import * as users from '../users/service';
import { recordAccountChange } from './audit';
import { userIdOf } from '../access/roles';

/**
 * The caller's own sessions (docs/accounts.md#the-callers-own-account): list them, sign one out, sign out all others.
 * A session is known to its user by its id (a `ses_` TypeID), which is never a credential: the
 * token is shown once at sign-in and only its hash is stored. A revoked session fails its next
 * request (the one session query checks `revoked_at`). These operations are session-only in the
 * contract (security: bearerAuth alone), which the router enforces, so the principal has a session id.
 */
function sessionOf(principal: Principal): { userId: string; sessionId: string } {
  return { userId: userIdOf(principal), sessionId: principal.sessionId! };
}

export async function listMySessions(deps: AppDeps, principal: Principal) {
  const { userId, sessionId } = sessionOf(principal);
  const rows = await users.listLiveSessions(deps.db, userId, deps.clock.now());
  return rows.map((row) => ({
    id: row.id,
    current: row.id === sessionId,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: (row.last_used_at ?? row.created_at).toISOString(),
    expiresAt: row.expires_at.toISOString(),
    ip: row.ip,
    userAgent: row.user_agent,
    authMethod: row.auth_method,
    secondFactor: row.second_factor,
  }));
}

/** Another user's session, or one no longer live, is 404 (the same answer: nothing to tell apart). */
export async function revokeMySession(deps: AppDeps, principal: Principal, targetSessionId: string): Promise<void> {
  const { userId } = sessionOf(principal);
  await deps.db.transaction().execute(async (trx) => {
    if (!(await users.revokeSessionOfUser(trx, userId, targetSessionId, deps.clock.now()))) {
      throw new NotFound('session_not_found', 'You have no live session with this id.');
    }
    await recordAccountChange(trx, deps.audit, userId, 'member.session_revoked', { sessionId: { from: targetSessionId, to: null } });
  });
}

export async function revokeOtherSessions(deps: AppDeps, principal: Principal): Promise<number> {
  const { userId, sessionId } = sessionOf(principal);
  return deps.db.transaction().execute(async (trx) => {
    const revoked = await users.revokeSessionsOfUser(trx, userId, sessionId, deps.clock.now());
    if (revoked > 0) await recordAccountChange(trx, deps.audit, userId, 'member.sessions_revoked', { sessions: { from: revoked, to: 0 } });
    return revoked;
  });
}

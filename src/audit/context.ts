import type { AnyPrincipal } from '../domain/principal';
import type { Actor, AuditBenchSkip, AuditContext } from '../domain/audit-context';
import type { Clock } from '../lib/clock';

// The context travels explicitly, on the request's AppDeps (`deps.audit`), not in an
// AsyncLocalStorage: one AsyncLocalStorage.run makes Node enable promise hooks for the whole
// process, and every promise of every request then pays for their hooks (about 12% of a request's CPU).

export type { Actor, ActorType, AuditContext } from '../domain/audit-context';

/**
 * Principal → actor, the one place that knows how each kind of credential acts. Kinds another
 * area adds (SCIM tokens, worker tokens) map here by their `kind`.
 */
export function actorOf(principal: AnyPrincipal | null): Actor {
  if (!principal) return { type: 'system', id: null, memberId: null };
  const p = principal;
  switch (p.kind) {
    case 'apiKey':
      // A service account's key acts as the account (docs/audit.md#the-actor); a person's as the key.
      if (p.serviceAccountId !== null && p.apiKeyId !== null) {
        return { type: 'service_account', id: p.serviceAccountId, memberId: p.membership?.memberId ?? null, apiKeyId: p.apiKeyId };
      }
      return { type: 'api_key', id: p.apiKeyId, memberId: p.membership?.memberId ?? null };
    case 'session':
      return { type: 'member', id: p.userId, memberId: p.membership?.memberId ?? null };
    case 'accessToken': {
      // The member acting (a person, or a service account: its member has no user) and the client it authorized (docs/oauth.md#access-tokens-at-the-api).
      // A worker's own token: the worker, which has no member (docs/audit.md#the-actor).
      if (p.worker && !p.worker.delegated) return { type: 'worker', id: p.worker.id, memberId: null, ...(p.clientId ? { clientId: p.clientId } : {}) };
      // A token exchanged for the member names the worker acting for them (`act`).
      const via = { ...(p.clientId ? { clientId: p.clientId } : {}), ...(p.worker?.delegated ? { act: { sub: p.worker.id } } : {}) };
      if (p.serviceAccountId !== null) return { type: 'service_account', id: p.serviceAccountId, memberId: p.membership?.memberId ?? null, ...via };
      return { type: 'member', id: p.userId, memberId: p.membership?.memberId ?? null, ...via };
    }
    case 'worker':
      return { type: 'worker', id: p.workerId, memberId: null };
    case 'scim':
      return { type: 'scim', id: p.scimTokenId, memberId: null };
    case 'workerClaim':
      // Not verified yet, so it names nobody (its operation records no audit entry).
      return { type: 'system', id: null, memberId: null };
  }
}

/** The organization a principal acts in. */
function organizationOf(principal: AnyPrincipal | null): string | null {
  if (!principal) return null;
  if (principal.kind === 'worker' || principal.kind === 'scim') return principal.organizationId;
  if (principal.kind === 'workerClaim') return null;
  return principal.membership?.organizationId ?? principal.activeOrganizationId ?? null;
}

/** The request's context, derived once by the router from the handler context (src/server/router.ts). */
export function contextOfRequest(input: {
  principal: AnyPrincipal | null;
  requestId: string;
  ip: string;
  userAgent: string | undefined;
  clock: Clock;
  benchSkip: AuditBenchSkip;
}): AuditContext {
  return {
    actor: actorOf(input.principal),
    organizationId: organizationOf(input.principal),
    requestId: input.requestId || null,
    ip: input.ip || null,
    userAgent: input.userAgent ? input.userAgent.slice(0, 512) : null,
    clock: input.clock,
    benchSkip: input.benchSkip,
  };
}

/** A change made by the service itself (a periodic job, a worker-facing route without a member). */
export function systemContext(clock: Clock, organizationId: string | null = null, actor: Actor = { type: 'system', id: null, memberId: null }): AuditContext {
  return { actor, organizationId, requestId: null, ip: null, userAgent: null, clock, benchSkip: 'off' };
}

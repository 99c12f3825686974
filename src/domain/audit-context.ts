import type { Clock } from '../lib/clock';
import type { AnyPrincipal } from './principal';

/*
 * The audit context, here with the other types every layer shares: AppDeps carries the request's
 * context (`deps.audit`). The server derives it from the principal (contextOfRequest, below: pure,
 * no I/O), src/audit/ consumes it; so the server never calls into the audit module before the
 * handler does.
 */

/** Who made a change (docs/audit.md). */
export type ActorType = 'member' | 'api_key' | 'service_account' | 'scim' | 'worker' | 'system';

export interface Actor {
  type: ActorType;
  /**
   * Who acted: the user (session), the API key (a person's key), the service account (`svc_`),
   * the SCIM token or the worker; null for the system.
   */
  id: string | null;
  /** The organization member acting, when there is one. */
  memberId: string | null;
  /** A service account's API key it acted through; absent otherwise (so other entries hash as before). */
  apiKeyId?: string;
  /** The OAuth client of an access token the change was made with; absent otherwise (so other entries hash as before). */
  clientId?: string;
  /** RFC 8693's actor of a token exchanged for the member (the worker acting for them); absent otherwise (so other entries hash as before). */
  act?: { sub: string };
}

/**
 * What audited writes leave out under the benchmark-only switch AUDIT_BENCH_DISABLE: nothing (as
 * shipped), the audit entry and chain head, or the change's event and deliveries too.
 */
export type AuditBenchSkip = 'off' | 'entries' | 'entries-and-events';

/** What an audit entry says about the request that made the change. */
export interface AuditContext {
  actor: Actor;
  /** The organization the caller acts in (the principal's active one); a change may name another. */
  organizationId: string | null;
  requestId: string | null;
  ip: string | null;
  userAgent: string | null;
  /** The service's injected clock: entries are timed by it (retention tests move it). */
  clock: Clock;
  /** 'off' except under the benchmark switch AUDIT_BENCH_DISABLE (see docs/settings.md). */
  benchSkip: AuditBenchSkip;
}

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

/** The request's context, derived once per request by the server (its router, and a front's requestDeps) from the principal. */
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

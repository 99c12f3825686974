import type { Clock } from '../lib/clock';

/*
 * The audit context's types, here with the other types every layer shares: AppDeps carries the
 * request's context (`deps.audit`), and src/audit/ derives and consumes it.
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

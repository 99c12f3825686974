// The context travels explicitly, on the request's AppDeps (`deps.audit`), not in an
// AsyncLocalStorage: one AsyncLocalStorage.run makes Node enable promise hooks for the whole
// process, and every promise of every request then pays for their hooks (about 12% of a request's CPU).

export type { Actor, ActorType, AuditContext } from '../domain/audit-context';
// Derived from the principal beside its types (src/domain/audit-context.ts), where the server reads it.
export { actorOf, contextOfRequest, systemContext } from '../domain/audit-context';


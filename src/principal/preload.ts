import type { Membership } from '../domain/principal';

/**
 * The seam that hands data read by a request's credential check (a session preload, see
 * SessionPreload in ./session.ts) to the operation's service, without threading it through the
 * router: GET /v1/org reads its whole context in the session query, and the handler takes it here.
 *
 * Keyed by the request's own membership object, held weakly: an entry lives exactly as long as
 * the request's principal, never outlives the request, and is reachable only by the code holding
 * that object (an equal membership of another request finds nothing). `take` removes the entry:
 * preloaded data answers once, a second read goes to the database.
 *
 * Pinned by test/seams/request-preload.test.ts.
 */
export class RequestPreload<T> {
  private readonly byMembership = new WeakMap<Membership, T>();

  keep(membership: Membership, value: T): void {
    this.byMembership.set(membership, value);
  }

  take(membership: Membership): T | undefined {
    const value = this.byMembership.get(membership);
    if (value !== undefined) this.byMembership.delete(membership);
    return value;
  }
}

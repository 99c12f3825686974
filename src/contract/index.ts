import type { operations } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { AnyPrincipal } from '../domain/principal';
import type { AccessTokenLoader, SessionLoader } from '../domain/principal';

export type OperationId = keyof operations;
type Op<K extends OperationId> = operations[K];
type IsNever<T> = [T] extends [never] ? true : false;
type JsonContent<T> = T extends { content: { 'application/json': infer B } } ? B : undefined;

export type RequestBody<K extends OperationId> =
  IsNever<NonNullable<Op<K>['requestBody']>> extends true ? undefined : JsonContent<NonNullable<Op<K>['requestBody']>>;
type Param<K extends OperationId, Where extends 'path' | 'query' | 'header'> =
  IsNever<NonNullable<Op<K>['parameters'][Where]>> extends true ? Record<string, never> : NonNullable<Op<K>['parameters'][Where]>;
export type PathParams<K extends OperationId> = Param<K, 'path'>;
export type QueryParams<K extends OperationId> = Param<K, 'query'>;

// 302: the SSO callbacks send the browser back to `returnTo`.
type SuccessStatus = 200 | 201 | 202 | 204 | 302;
type ResponsesOf<K extends OperationId> = Op<K>['responses'];

/** What a handler returns: one of the operation's declared success statuses with its typed body. */
export type HandlerResult<K extends OperationId> = {
  [S in keyof ResponsesOf<K>]: S extends SuccessStatus
    ? { status: S; body: JsonContent<ResponsesOf<K>[S]>; headers?: Record<string, string>; stream?: StreamBody }
    : never;
}[keyof ResponsesOf<K>];

export interface HandlerContext<K extends OperationId> {
  operationId: K;
  body: RequestBody<K>;
  params: PathParams<K>;
  query: QueryParams<K>;
  headers: Record<string, string | undefined>;
  /** Who is calling (src/principal/); null only on public operations (`security: []`). */
  principal: AnyPrincipal | null;
  deps: AppDeps;
  requestId: string;
  ip: string;
}

export type Handler<K extends OperationId> = (ctx: HandlerContext<K>) => Promise<HandlerResult<K>>;

/** Handlers of a set of operations; an area exports one of these. */
export type HandlerMap<K extends OperationId> = { [P in K]: Handler<P> };

/** The full registry: a missing operation is a compile error. */
export type Handlers = HandlerMap<OperationId>;

/** The shape sent to the client, for successes and errors alike. */
export interface HttpResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** A streamed body (non-JSON content such as an export): chunks written with backpressure. */
  stream?: StreamBody;
}

/** Chunks of a streamed response, produced lazily (the consumer pulls, so memory stays flat). */
export type StreamBody = AsyncIterable<string | Buffer>;

/**
 * Operations whose session check also reads the operation's data in the same round trip (the
 * session scheme calls the loader instead of the plain session check; the loader answers the same
 * principal, or null for a dead session). Declared by the area beside its handlers, for hot read
 * paths only; the server calls them without knowing their SQL.
 */
export type SessionLoaders = Partial<Record<OperationId, SessionLoader>>;

/** The same for an OAuth access token (the `oauthAccessToken` scheme): its check and the operation's data in one statement. */
export type AccessTokenLoaders = Partial<Record<OperationId, AccessTokenLoader>>;

/**
 * Operations that check their worker token inside the statement that does the work (one round
 * trip): the security handler hands them an unchecked `workerClaim` (src/principal/worker-token.ts)
 * and the operation answers 401 when its statement finds no worker with that id and token hash.
 * Declared by the area beside its handlers, for hot paths whose statement is written that way.
 */
export type DeferredCredentials = readonly OperationId[];

import type { RequestHandler, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { HttpResult } from './index';
import type { AppDeps } from '../domain/deps';
import type { AnyPrincipal } from '../domain/principal';
import type { Settings } from '../settings';

/*
 * How an area plugs a front into the server without the server knowing its rules (ARCHITECTURE.md
 * "Fronts and dialects"). The server (src/server/) imports the areas' plugins from its registry;
 * the areas import only these types, never the server.
 */

/**
 * A dialect of the contract's own operations: every path under `basePath` is an operation of
 * openapi/spec.yaml (routed, authenticated and validated like any other), but its answers have
 * another shape. SCIM (RFC 7644) is one: its content type and error body differ from `/v1`'s.
 */
export interface Dialect {
  name: string;
  /** The paths it owns: `basePath` itself and everything under `basePath/`. */
  basePath: string;
  /** Every answer under basePath (success or error, from any layer) passes here once, before it is written. */
  shape(result: HttpResult): HttpResult;
  /**
   * Runs before routing on the dialect's paths: rewrites spellings, refuses early. A refusal is
   * passed to `next(err)` as an AppError, so it is answered (and shaped) like every other error.
   */
  before?: RequestHandler;
  /** A body sent without a Content-Type is read as JSON (some clients of the dialect omit it). */
  untypedBodyIsJson?: boolean;
}

/** What the server lends a front so that it answers as the contract's routes do. */
export interface FrontTools {
  /** The services' dependencies of the app (no request's audit context: see `requestDeps`). */
  deps: AppDeps;
  /**
   * The dependencies for one request: the same audit context the router derives for an operation
   * (who, request id, address, user agent), so a front's changes are audited like the API's.
   */
  requestDeps(req: Request, principal: AnyPrincipal | null): AppDeps;
  /** The one error mapper (src/server/errors.ts): an AppError's answer, 503 for an outage, a bare 500 otherwise. */
  errorResult(err: unknown, logger: Logger): HttpResult;
  /** Writes an answer the way every operation's answer is written (dialects' shapes applied). */
  send(res: Response, result: HttpResult): void;
  /**
   * Runs one of the contract's operations down the API's own dispatch (validation, the access
   * check, the handler, its audit entry and events), as its HTTP request would, for `principal`
   * standing as the result of the security scheme `scheme` (a front that authenticated its caller
   * itself). The answer is what the HTTP call would answer; it never throws.
   */
  invoke(operationId: string, input: OperationInput, given: { scheme: string; principal: AnyPrincipal }, req: Request, res: Response): Promise<HttpResult>;
  /**
   * What the router answers this principal for this operation before its handler runs (session
   * gates, the contract's access declaration: src/server/access.ts), or null when it may call it.
   * The router's one check, so a front lists exactly what its caller may do.
   */
  refusal(operationId: string, principal: AnyPrincipal): HttpResult | null;
}

/** An operation's input given as values rather than read from an HTTP request (an MCP tool's arguments). */
export interface OperationInput {
  /** Path parameters by name (each fills one segment). */
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  /** Header parameters, names in lower case. */
  headers: Record<string, string>;
  /** The JSON body, when the operation takes one. */
  body?: unknown;
}

/**
 * A front outside the contract's operations, with routes of its own (the hosted pages; the OAuth
 * authorization server's endpoints; the MCP endpoint). It is mounted before the API router, in the
 * order of the registry, when `enabled` says so.
 */
export interface Front {
  name: string;
  /** Served with these settings (default: always). */
  enabled?(settings: Settings): boolean;
  /** Paths whose request bodies are HTML forms (application/x-www-form-urlencoded) rather than JSON. */
  formPaths?: readonly string[];
  /**
   * Paths whose bodies the front reads itself (the body layer leaves them untouched): a protocol
   * library that parses its own requests.
   */
  ownBodyPaths?: readonly string[];
  /** Path prefixes whose bodies the front reads itself (pages under a path with an id in it). */
  ownBodyPrefixes?: readonly string[];
  mount(tools: FrontTools): RequestHandler;
}

import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Context, Document } from 'openapi-backend';
import { AppError, Invalid, MethodNotAllowed, ResponseValidationFailed, RouteNotFound, Unauthorized } from '../lib/errors';
import { isUnavailable } from '../db/errors';
import { assertSessionGates } from '../access/session-gates';
import { CREDENTIAL_RESOLVERS, credentialReader, type SchemeDefinition } from '../principal';
import type { AnyPrincipal } from '../domain/principal';
import type { AppDeps } from '../domain/deps';
import { contract, createBackend, initBackend, toBackendRequest } from './openapi';
import { installFastParsing, installFastRouting } from './fast-router';
import { createDispatcher } from './dispatch';
import { accessChecks } from './access';
import { nulInRequest } from './nul';
import { malformedEncoding } from './encoding';
import { errorToResult, resultOf, validationDetails } from './errors';
import { shapeForRoute } from './dialects';
import { serializeBody } from '../lib/json-text';
import { send } from './send';
import { accessTokenLoaders, deferredCredentials, sessionLoaders } from './registry';
import { contextOfRequest } from '../domain/audit-context';
import { tracing } from '../observability/tracing';
import type { HandlerContext, Handlers, HttpResult, OperationId } from '../contract';
import type { OperationInput } from '../contract/fronts';

export interface RouterOptions {
  /** Check every response against the spec (tests and development); a mismatch becomes a 500. */
  validateResponses: boolean;
  /** Compile the validators before the first request (see AppOptions in src/server/app.ts). */
  compileValidatorsAtStart: boolean;
  /** The contract to serve (tests build the router on an altered copy); the bundled one by default. */
  contract?: Document;
  /** Called once the contract is loaded and the validators compiled (src/main.ts collects start-up's garbage then). */
  onReady?: () => void;
}

/** The API router, and the two ways a front reaches the same operations without an HTTP request of their own. */
export interface Api {
  handler: RequestHandler;
  /**
   * Runs an operation as its HTTP request would run (./dispatch.ts: validation, access checks,
   * handler, audit entry and events, response check), `principal` standing as the result of the
   * security scheme `scheme` instead of a credential read from headers. Never throws: every failure
   * is its answer.
   */
  invoke(operationId: string, input: OperationInput, given: { scheme: string; principal: AnyPrincipal }, req: Request, res: Response): Promise<HttpResult>;
  /** The router's own refusal of this principal for this operation (session gates, then access), null when it may call it. */
  refusal(operationId: string, principal: AnyPrincipal): AppError | null;
}

/**
 * A principal handed to `invoke`, by the per-call response object the security handlers are given:
 * while one is there, no credential is read and only its scheme answers.
 */
const givenPrincipals = new WeakMap<object, { scheme: string; principal: AnyPrincipal }>();

/**
 * Express → openapi-backend (route, authenticate, validate) → typed handler → `{status, body}`.
 * Every answer, success or error, leaves through `send`, so nothing else writes a response.
 */
export function createApi(deps: AppDeps, handlers: Handlers, options: RouterOptions): Api {
  const definition = options.contract ?? contract;
  // Who may call each operation, from its declaration in the contract (./access.ts); an operation
  // that declares none, or names an unknown permission, stops the start here.
  const access = accessChecks(definition);
  const api = createBackend(definition);

  // Every security scheme of the spec turns its credential into a principal through src/principal/;
  // a scheme without a resolver there stops the start.
  const schemes = (definition.components?.securitySchemes ?? {}) as Record<string, SchemeDefinition>;
  for (const [name, definition] of Object.entries(schemes)) {
    const read = credentialReader(name, definition);
    const resolve = CREDENTIAL_RESOLVERS[name]!;
    api.registerSecurityHandler(name, async (c: Context, _req: Request, res: Response) => {
      const given = givenPrincipals.get(res);
      if (given) return given.scheme === name ? given.principal : false;
      const secret = read(c.request.headers);
      if (!secret) return false;
      const operationId = c.operation?.operationId as OperationId;
      const sessionLoader = sessionLoaders[operationId];
      const accessTokenLoader = accessTokenLoaders[operationId];
      return (await resolve({ db: deps.db, secret, now: deps.clock.now(), sessionLoader, accessTokenLoader, query: c.request.query as Record<string, unknown>, cursors: deps.cursors, deferred: deferredCredentials.has(operationId), publicBaseUrl: deps.settings.publicBaseUrl })) ?? false;
    });
  }

  // Registered once the router is built and its operation list memoized (below): registering a
  // handler makes the library look its operation up, rebuilding the list each time (~250 times
  // ~2.7 ms, a third of a test app's start).
  const registered: Record<string, (...args: never[]) => unknown> = {
    // Runs once a route matched (before auth and validation), so every log line names its route.
    postRoutingHandler: (c: Context, _req: Request, res: Response) => {
      if (!c.operation) return;
      res.locals.route = `${c.operation.method.toUpperCase()} ${c.operation.path}`;
      res.locals.operationId = c.operation.operationId;
    },
    validationFail: (c: Context): HttpResult => {
      return resultOf(new Invalid(validationDetails(c.validation.errors)));
    },
    notFound: (c: Context): HttpResult => resultOf(new RouteNotFound(c.request.method, c.request.path)),
    methodNotAllowed: (c: Context): HttpResult => resultOf(new MethodNotAllowed(c.request.method, c.request.path)),
    unauthorizedHandler: (c: Context): HttpResult => {
      // A security handler that failed because the database is down is not an auth failure.
      let refusal: AppError | undefined;
      for (const result of Object.values(c.security ?? {})) {
        const error = (result as { error?: unknown } | undefined)?.error;
        if (error && isUnavailable(error)) throw error;
        // A scheme that says why it refused answers its own 401 (an access token's WWW-Authenticate).
        if (error instanceof AppError && error.status === 401) refusal = error;
      }
      return resultOf(refusal ?? new Unauthorized());
    },
  };

  /** What the router checks before any handler runs; `refusal` asks the same, for a front. */
  const admit = (operationId: string, operation: { path: string; operationId?: string }, principal: AnyPrincipal | null) => {
    assertSessionGates(principal, operation, deps.settings.emailVerification === 'required');
    access.get(operationId)?.(principal);
  };

  for (const operationId of Object.keys(handlers) as OperationId[]) {
    const handler = handlers[operationId] as unknown as (ctx: HandlerContext<OperationId>) => Promise<HttpResult>;
    const checkAccess = access.get(operationId);
    if (checkAccess === undefined) throw new Error(`${operationId}: has a handler but no operation in the contract`);
    registered[operationId] = async (c: Context, req: Request, res: Response): Promise<HttpResult> => {
      const security = (c.security ?? {}) as Record<string, AnyPrincipal | boolean | undefined>;
      // A scheme's entry is its principal, false, or `{error}` when its handler threw.
      const principal = Object.values(security).find((value): value is AnyPrincipal => typeof value === 'object' && value !== null && 'kind' in value) ?? null;
      const requestId = String(req.id ?? '');
      const ip = req.ip ?? '';
      // The audit context is derived here, once per request, and travels on the request's deps
      // to recordChange (src/audit/): one shallow copy, no AsyncLocalStorage (see context.ts).
      const audit = contextOfRequest({
        principal,
        requestId,
        ip,
        userAgent: req.get('user-agent'),
        clock: deps.clock,
        benchSkip: deps.settings.auditBenchDisable,
      });
      // The request span's org.id (src/observability/start-tracing.ts); set only while tracing.
      if (tracing && audit.organizationId) res.locals.organizationId = audit.organizationId;
      const ctx = {
        operationId,
        body: c.request.requestBody,
        params: c.request.params,
        query: c.request.query,
        headers: c.request.headers,
        principal,
        deps: { ...deps, audit },
        requestId,
        ip,
      } as unknown as HandlerContext<OperationId>;
      let result: HttpResult;
      const body = res.locals.bodyMayHoldNul === false ? undefined : c.request.requestBody;
      const nul = nulInRequest({ params: c.request.params, query: c.request.query, body });
      try {
        if (nul) throw Invalid.at(nul, 'must not contain a NUL character (U+0000)');
        admit(operationId, c.operation, principal);
        result = await handler(ctx);
      } catch (err) {
        result = errorToResult(err, req.log ?? deps.logger);
      }
      return options.validateResponses ? checkResponse(operationId, result, req) : result;
    };
  }

  /**
   * Test/development guard: a response the spec does not declare is a bug in the service. What is
   * checked is what `send` will send (SCIM routes shaped there, once).
   */
  function checkResponse(operationId: OperationId, answer: HttpResult, req: Request): HttpResult {
    if (answer.status === 500 || answer.stream) return answer;
    const result = shapeForRoute(req.path, answer);
    const operation = api.getOperation(operationId);
    const declared = operation?.responses ?? {};
    const known = String(result.status) in declared || 'default' in declared;
    const declaredResponse = declared[String(result.status)] as { content?: unknown } | undefined;
    if (known && result.body === undefined && declaredResponse && !declaredResponse.content) return answer;
    // What is checked is what is sent: the serialised body, parsed (JSON text spliced in, dates as strings).
    const sent: unknown = result.body === undefined ? undefined : JSON.parse(serializeBody(result.body));
    const check = known ? api.validateResponse(sent, operationId, result.status) : undefined;
    if (known && !check?.errors?.length) return answer;
    const problem = known ? JSON.stringify(check?.errors) : `status ${result.status} is not declared`;
    (req.log ?? deps.logger).error({ operationId, status: result.status, problem }, 'response does not match the spec');
    return resultOf(new ResponseValidationFailed(`${operationId} ${result.status}: ${problem}`));
  }

  const ready = initBackend(api, {
    compileRequestValidators: options.compileValidatorsAtStart,
    compileResponseValidators: options.validateResponses && options.compileValidatorsAtStart,
  }).then(() => {
    installFastRouting(api.router);
    api.register(registered as never);
    const dispatch = createDispatcher(api, installFastParsing(api.router));
    options.onReady?.();
    return dispatch;
  });

  const handler = (req: Request, res: Response, next: NextFunction) => {
    ready
      .then((dispatch) => {
        const matched = api.router.matchOperation({ method: req.method, path: req.path } as never);
        const malformed = matched ? malformedEncoding(req.path, matched.path, req.originalUrl) : null;
        if (malformed) return resultOf(new Invalid([malformed], `${malformed.path.join('.')} is not valid percent-encoding.`));
        const request = toBackendRequest(req);
        // OAuth callbacks ignore response parameters they do not know (RFC 6749 §4.1.2).
        if (matched && (matched as unknown as Record<string, unknown>)['x-unknown-query-parameters'] === 'ignore') {
          const known = new Set((matched.parameters ?? []).filter((p) => 'in' in p && p.in === 'query').map((p) => (p as { name: string }).name));
          for (const name of Object.keys(request.query)) if (!known.has(name)) delete request.query[name];
        }
        // The matched operation runs openapi-backend's steps without re-routing (./dispatch.ts).
        return dispatch(request, matched, req, res) as Promise<HttpResult>;
      })
      .then((result: HttpResult) => send(res, result))
      .catch((err: unknown) => next(err));
  };

  const invoke: Api['invoke'] = async (operationId, input, given, req, res) => {
    try {
      const dispatch = await ready;
      const operation = api.getOperation(operationId);
      if (!operation) return resultOf(new RouteNotFound('POST', operationId));
      // The request the operation's HTTP call would be: its path filled with the parameters
      // (each one segment, encoded), the query and headers as given.
      const path = operation.path.replace(/\{([^}]+)\}/g, (_whole, name: string) => encodeURIComponent(String(input.params[name] ?? '')));
      const headers: Record<string, string> = { ...input.headers };
      const ua = req.get('user-agent');
      if (ua) headers['user-agent'] = ua;
      if (input.body !== undefined) headers['content-type'] = 'application/json';
      const request = { method: operation.method.toUpperCase(), path, query: { ...input.query } as Record<string, string | string[]>, body: input.body, headers };
      // Its own response object (the request's, with locals of its own): the route a log line
      // names stays /mcp's, and the given principal is found by it, for this call only.
      const own = Object.create(res, { locals: { value: {}, writable: true } }) as Response;
      givenPrincipals.set(own, given);
      const matched = api.router.matchOperation({ method: request.method, path } as never);
      // A parameter that changes the route (an encoded value cannot, but an empty one can) is refused as such.
      if (matched?.operationId !== operationId) return resultOf(new Invalid([{ path: ['path'], message: 'must name one resource' }], 'A path parameter is empty or malformed.'));
      return (await dispatch(request, matched, req, own)) as HttpResult;
    } catch (err) {
      return errorToResult(err, req.log ?? deps.logger);
    }
  };

  // operationId → its path template, for the checks that read it (the session gates).
  const templates = new Map<string, { path: string; operationId: string }>();
  for (const [path, item] of Object.entries(definition.paths ?? {})) {
    for (const op of Object.values(item ?? {})) {
      const id = (op as { operationId?: unknown } | undefined)?.operationId;
      if (typeof id === 'string') templates.set(id, { path, operationId: id });
    }
  }
  const refusal: Api['refusal'] = (operationId, principal) => {
    const operation = templates.get(operationId);
    if (!operation) return new RouteNotFound('POST', operationId);
    try {
      admit(operationId, operation, principal);
      return null;
    } catch (err) {
      if (err instanceof AppError) return err;
      throw err;
    }
  };

  return { handler, invoke, refusal };
}

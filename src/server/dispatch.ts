import type OpenAPIBackend from 'openapi-backend';
import type { Context, Handler, Operation, Request as BackendRequest } from 'openapi-backend';
import type { FastParse } from './fast-router';

/*
 * openapi-backend's handleRequest steps, for a request whose operation our middleware already
 * matched, without the generic overhead.
 *
 * Why: on every request handleRequest parses the request four times (before routing, after,
 * inside validation, after coercion), matches the operation a second time, flattens the security
 * requirements with lodash and runs each scheme through a Promise.all of promise chains. Here the
 * requirements and handlers are looked up once per operation, the request is parsed once before
 * the library's own validation (which parses it again, as in handleRequest) and the security
 * handlers are called directly. Bench scenario 1 (GET /v1/org, same run, alternating rounds, the
 * service's CPU per request): +16 % through handleRequest over 3 runs (46 rounds; +6, +15, +22 %
 * by run; 0.50 against 0.61 ms in the longest). Validation is the library's call: doing it on the
 * one parse as well (a request check of our own) bought 1 % and was removed.
 *
 * What it does not cover exactly goes to the library's handleRequest: no matched operation
 * (404, 405), a request the fast parse leaves to the library (a cookie header, a raw body, ...),
 * and any backend with hooks this does not run (pre-routing, post-security, pre-operation,
 * post-response) or without an unauthorized / validation-fail / operation handler. `leanDispatch`
 * counts both, and test/seams/fast-paths-in-production.test.ts fails when the service as it runs
 * in production sends a plain request to handleRequest.
 *
 * One difference on purpose: a scheme named by several requirements is asked once, where the
 * library asks it once per requirement (the answer is the same).
 *
 * Pinned by test/seams/dispatch-parity.test.ts (`npm run test:seams`): for every operation of the
 * spec and variants of credentials and input, the same handler gets an equal context from both.
 */
export type Dispatch = (request: BackendRequest, operation: Operation | undefined, ...args: unknown[]) => Promise<unknown>;

interface Plan {
  /** OR of ANDs: authorized when every scheme of one list passes (an empty list always passes). */
  requirements: string[][];
  /** Each scheme the requirements name, once, in the library's order; handler undefined when none is registered. */
  schemes: { name: string; handler: Handler | undefined }[];
  handler: Handler;
  /** No parameters and no body: a request without a query string has nothing to validate. */
  takesNothing: boolean;
}

const HOOKS_NOT_RUN = ['preRoutingHandler', 'postSecurityHandler', 'preOperationHandler', 'postResponseHandler'];

/**
 * What the lean dispatchers of this process did: operations they have a plan for, requests they
 * ran, requests they handed to handleRequest. Read by test/seams/fast-paths-in-production.test.ts.
 */
export const leanDispatch = { planned: 0, lean: 0, library: 0 };

/** Built once every handler is registered and the backend initialised (later registrations are not seen). */
export function createDispatcher(api: OpenAPIBackend, parse: FastParse): Dispatch {
  const handlers = api.handlers;
  const postRouting = handlers.postRoutingHandler;
  const unauthorized = handlers.unauthorizedHandler;
  const validationFail = handlers['400'] ?? handlers.validationFail;
  const plans = new Map<string, Plan>();
  const lean = unauthorized && validationFail && typeof api.validate === 'boolean' && !HOOKS_NOT_RUN.some((name) => handlers[name]);
  for (const operation of lean ? api.router.getOperations() : []) {
    const handler = handlers[operation.operationId ?? ''];
    if (!handler) continue;
    const requirements = (operation.security ?? []).map((requirement) => Object.keys(requirement));
    const names = [...new Set(requirements.flat())];
    leanDispatch.planned++;
    const takesNothing = (operation.parameters ?? []).length === 0 && operation.requestBody === undefined;
    plans.set(operation.operationId!, { requirements, schemes: names.map((name) => ({ name, handler: api.securityHandlers[name] })), handler, takesNothing });
  }

  return async (request, operation, ...args) => {
    const plan = operation?.operationId === undefined ? undefined : plans.get(operation.operationId);
    const parsed = plan ? parse(request, operation) : undefined;
    if (!plan || !parsed) {
      leanDispatch.library++;
      return api.handleRequest(request, ...args);
    }
    leanDispatch.lean++;
    const context = { api, request: parsed, operation } as Context;
    if (postRouting) await postRouting(context, ...args);

    // Every handler is started before any is awaited, as the library runs them side by side.
    const pending = plan.schemes.map(({ handler }) => (handler ? runSecurityHandler(handler, context, args) : undefined));
    const results: Record<string, unknown> = {};
    for (let i = 0; i < pending.length; i++) {
      const result = pending[i];
      results[plan.schemes[i]!.name] = isThenable(result) ? await result : result;
    }
    const authorized = plan.requirements.some((all) => all.every((name) => passes(results[name])));
    // The library's `{...results, authorized}`, without copying the object just built.
    results.authorized = authorized;
    context.security = results as Context['security'];
    if (!authorized && plan.requirements.length > 0) return unauthorized!(context, ...args);

    // The library's validation steps (backend.js handleRequest), on the same request. For an
    // operation that takes nothing, asked without a query string (GET /v1/org, /v1/me), they can
    // only pass: their result, as the library writes it, is set without running them (13 µs of a
    // GET /v1/org's ~250 in bench scenario 1's profile).
    if (api.validate && plan.takesNothing && Object.keys(request.query ?? {}).length === 0) {
      const coerced = { method: request.method, path: request.path, query: parsed.query, body: request.body, headers: request.headers, params: parsed.params };
      context.validation = { valid: true, errors: null, coerced } as unknown as Context['validation'];
    } else if (api.validate) {
      context.validation = api.validator.validateRequest(request, operation!);
      if (context.validation.errors) return validationFail!(context, ...args);
      if (api.validator.coerceTypes) context.request = api.router.parseRequest(context.validation.coerced, operation);
    }
    return plan.handler(context, ...args);
  };
}

/** The handler's answer, or `{error}` when it throws or rejects, stored as the library stores it. */
function runSecurityHandler(handler: Handler, context: Context, args: unknown[]): unknown {
  try {
    const result: unknown = handler(context, ...args);
    return isThenable(result) ? Promise.resolve(result).catch(failed) : result;
  } catch (error) {
    return failed(error);
  }
}

// A falsy reason (throw null) still fails: the library stores a stand-in error.
const failed = (error: unknown) => ({ error: error || new Error('security handler rejected') });

/** The library's test: a falsy answer, or an object with a truthy `error`, fails. */
function passes(result: unknown): boolean {
  return Boolean(result) && !(typeof result === 'object' && (result as { error?: unknown }).error);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}

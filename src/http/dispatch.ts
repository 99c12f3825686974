import type OpenAPIBackend from 'openapi-backend';
import type { Context, Handler, Operation, Request as BackendRequest } from 'openapi-backend';
import type { FastParse } from './fast-router';
import { requestCheck, type Checked } from './request-check';

/*
 * openapi-backend's handleRequest steps, for a request whose operation our middleware already
 * matched, without the generic overhead.
 *
 * Why: on every request handleRequest parses the request four times (before routing, after,
 * inside validation, after coercion), matches the operation a second time, flattens the security
 * requirements with lodash and runs each scheme through a Promise.all of promise chains. Here the
 * requirements and handlers are looked up once per operation, the request is parsed once
 * (validation reuses that parse: ./request-check.ts) and the security handlers are called
 * directly: GET /v1/org's steps took ~10 µs of CPU in a hot loop through handleRequest, ~4 µs
 * here, and the service's CPU per GET /v1/org fell by ~17 µs (~300 → ~285, interleaved A/B).
 *
 * What it does not cover exactly goes to the library's handleRequest: no matched operation
 * (404, 405), a request the fast parse leaves to the library (a cookie header, a raw body, ...),
 * and any backend with hooks this does not run (pre-routing, post-security, pre-operation,
 * post-response) or without an unauthorized / validation-fail / operation handler.
 *
 * One difference on purpose: a scheme named by several requirements is asked once, where the
 * library asks it once per requirement (the answer is the same).
 *
 * Pinned by test/seams/dispatch-parity.test.ts: for every operation of the spec and variants of
 * credentials and input, the same handler gets an equal context from both.
 */
export type Dispatch = (request: BackendRequest, operation: Operation | undefined, ...args: unknown[]) => Promise<unknown>;

interface Plan {
  /** OR of ANDs: authorized when every scheme of one list passes (an empty list always passes). */
  requirements: string[][];
  /** Each scheme the requirements name, once, in the library's order; handler undefined when none is registered. */
  schemes: { name: string; handler: Handler | undefined }[];
  handler: Handler;
  /** Validation and the coerced request; undefined when the backend does not validate. */
  check: ((request: BackendRequest, parsed: Context['request']) => Checked) | undefined;
}

const HOOKS_NOT_RUN = ['preRoutingHandler', 'postSecurityHandler', 'preOperationHandler', 'postResponseHandler'];

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
    const check = api.validate ? requestCheck(api, operation) : undefined;
    plans.set(operation.operationId!, { requirements, schemes: names.map((name) => ({ name, handler: api.securityHandlers[name] })), handler, check });
  }

  return async (request, operation, ...args) => {
    const plan = operation?.operationId === undefined ? undefined : plans.get(operation.operationId);
    const parsed = plan ? parse(request, operation) : undefined;
    if (!plan || !parsed) return api.handleRequest(request, ...args);
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
    context.security = { ...results, authorized };
    if (!authorized && plan.requirements.length > 0) return unauthorized!(context, ...args);

    if (plan.check) {
      const checked = plan.check(request, parsed);
      context.validation = checked.validation;
      if (checked.validation.errors) return validationFail!(context, ...args);
      context.request = checked.request;
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

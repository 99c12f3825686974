import OpenAPIBackend, { OpenAPIValidator, type Context, type Document } from 'openapi-backend';
import type { Request as ExpressRequest } from 'express';
import { checkSchemas, createAjv } from './validator';
// Imported (not read from disk) so the build copies it beside the compiled code.
import bundled from '../../generated/openapi.json';

/**
 * The bundled contract, loaded once. openapi-backend's own definition check targets OpenAPI 3.0
 * and rejects 3.1 documents, so it is bypassed (redocly lints the spec in CI); request validators
 * are compiled eagerly (initBackend), so a broken schema fails at start rather than on first use.
 */
export const contract = bundled as unknown as Document;

export function createBackend(definition: Document = contract): OpenAPIBackend {
  const api = new OpenAPIBackend({
    definition: structuredClone(definition),
    strict: true,
    // The validator is built by initBackend (below), which decides what is compiled up front.
    validate: false,
    coerceTypes: true,
    ignoreTrailingSlashes: false,
    customizeAjv: (_ajv, options) => createAjv(options),
  });
  api.validateDefinition = () => api.document;
  return api;
}

/**
 * The validator, built once per process and shared by every backend built in it: the contract
 * does not change after start, and compiling its validators is the expensive part of starting
 * (most of a start's CPU). A process holds one app in production; tests build several apps per file.
 */
let shared: { validator: OpenAPIValidator; requestsCompiled: boolean; responsesCompiled: boolean } | undefined;

export interface CompileOptions {
  /** Compile every response validator up front (otherwise on first use, when responses are checked). */
  compileResponseValidators: boolean;
  /**
   * Compile every request validator up front (the service: a broken schema fails the start, not a
   * request). Tests pass false: each validator is compiled on first use, once per process, and
   * test/seams/validator-parity.test.ts compiles them all.
   */
  compileRequestValidators?: boolean;
}

/**
 * init() plus the validator. Request validators are compiled at start for every operation (a
 * broken schema fails the start, not a request). openapi-backend would also compile two sets of
 * response validators and the response-header validators for every operation, which the service
 * never uses unless it checks its own responses (tests): compiling them took most of the start
 * time and tens of MB of heap, so they are compiled only when asked (and otherwise on first use).
 */
export async function initBackend(api: OpenAPIBackend, options: CompileOptions): Promise<OpenAPIBackend> {
  // The document as given (init dereferences it into a cyclic graph); a backend of this module is given an object.
  if (!shared) checkSchemas(api.inputDocument as Document);
  await api.init();
  shared ??= {
    validator: validatorFor(api),
    requestsCompiled: false,
    responsesCompiled: false,
  };
  const { validator } = shared;
  if ((options.compileRequestValidators ?? true) && !shared.requestsCompiled) {
    validator.preCompileRequestValidators();
    shared.requestsCompiled = true;
  }
  if (options.compileResponseValidators && !shared.responsesCompiled) {
    validator.preCompileResponseValidators();
    validator.preCompileResponseHeaderValidators();
    shared.responsesCompiled = true;
  }
  api.validator = validator;
  api.validate = true;
  return api;
}

/** A validator of the backend's own definition, as the library's init builds one; compiled on first use. */
export function validatorFor(api: OpenAPIBackend): OpenAPIValidator {
  return new OpenAPIValidator({
    definition: api.definition,
    ajvOpts: api.ajvOpts,
    customizeAjv: api.customizeAjv,
    router: api.router,
    lazyCompileValidators: true,
    coerceTypes: api.coerceTypes,
  });
}

/**
 * openapi-backend needs a plain request object: Express's getters (path params, query) are lost
 * when it spreads the request, and coercion writes into the object it is given.
 */
export function toBackendRequest(req: ExpressRequest) {
  return {
    method: req.method,
    path: req.path,
    query: { ...(req.query as Record<string, string | string[]>) },
    body: req.body,
    headers: req.headers as Record<string, string | string[]>,
  };
}

export type BackendContext = Context;

import OpenAPIBackend, { type Context, type Document } from 'openapi-backend';
import type { Request as ExpressRequest } from 'express';
import { createAjv } from './validator';
// Imported (not read from disk) so the build copies it beside the compiled code.
import bundled from '../../generated/openapi.json';

/**
 * The bundled contract, loaded once. openapi-backend's own definition check targets OpenAPI 3.0
 * and rejects 3.1 documents, so it is bypassed (redocly lints the spec in CI); `strict` keeps
 * eager validator compilation, so a broken schema fails at start rather than on first use.
 */
export const contract = bundled as unknown as Document;

export function createBackend(): OpenAPIBackend {
  const api = new OpenAPIBackend({
    definition: structuredClone(contract),
    strict: true,
    validate: true,
    coerceTypes: true,
    ignoreTrailingSlashes: false,
    customizeAjv: (_ajv, options) => createAjv(options),
  });
  api.validateDefinition = () => api.document;
  return api;
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

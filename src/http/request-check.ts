import type OpenAPIBackend from 'openapi-backend';
import type { Operation, ParsedRequest, Request as BackendRequest, ValidationResult } from 'openapi-backend';
import type { ErrorObject } from 'ajv';
import { plainQueryCopy } from './fast-router';

/** The validation result, and the request as the operation handler sees it (coerced). */
export interface Checked {
  validation: ValidationResult;
  request: ParsedRequest;
}

/**
 * openapi-backend's validateRequest (validation.js) and handleRequest's re-parse of the coerced
 * request, on the request the dispatcher already parsed (src/http/dispatch.ts).
 *
 * Why: the library parses the request again inside validateRequest and once more after
 * coercion, and walks the query and parameters with lodash, on every request. Here the same
 * compiled validators get the same input, built from the one parse: fresh copies of the path
 * parameters, query (an array parameter given once wrapped in an array, as the library does)
 * and headers, since coercion writes into them; the re-parse becomes the parsed request with the
 * coerced query copied in. An operation with a JSON-encoded or non-exploded query parameter, or a
 * request with a raw (unparsed) body, is checked by the library's own calls.
 *
 * Pinned by test/seams/dispatch-parity.test.ts (the validation and the request each handler gets).
 */
export function requestCheck(api: OpenAPIBackend, operation: Operation): (request: BackendRequest, parsed: ParsedRequest) => Checked {
  const coerce = Boolean(api.validator.coerceTypes);
  const library = (request: BackendRequest, parsed: ParsedRequest): Checked => {
    const validation = api.validator.validateRequest(request, operation);
    const coerced = !validation.errors && coerce ? api.router.parseRequest(validation.coerced as BackendRequest, operation) : parsed;
    return { validation, request: coerced };
  };
  const query = (operation.parameters ?? []).filter((p) => !('$ref' in p) && p.in === 'query') as { name: string; schema?: { type?: unknown }; content?: Record<string, unknown>; explode?: boolean }[];
  if (query.some((p) => p.content?.['application/json'] || p.explode === false)) return library;
  // The library looks up the first query parameter of that name (lodash's find).
  const arrays = new Set(query.filter((p, i) => query.findIndex((q) => q.name === p.name) === i && p.schema?.type === 'array').map((p) => p.name));
  const operationId = operation.operationId!;

  return (request, parsed) => {
    if (typeof request.body !== 'object' && request.body !== undefined) return library(request, parsed);
    const query = plainQueryCopy(parsed.query as Record<string, unknown>)!;
    for (const name of Object.keys(query)) if (typeof query[name] === 'string' && arrays.has(name)) query[name] = [query[name]];
    const parameters: Record<string, unknown> = { path: { ...parsed.params }, query, header: { ...parsed.headers }, cookie: { ...parsed.cookies } };
    const rawContentType = (parsed.headers as Record<string, unknown>)['content-type'];
    const contentType = String((Array.isArray(rawContentType) ? rawContentType[0] : rawContentType) || '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (typeof parsed.requestBody === 'object' || contentType === 'application/json') parameters.requestBody = parsed.requestBody;

    const validation: ValidationResult & { errors: ErrorObject[] | null; coerced: BackendRequest } = { valid: true, coerced: { ...request }, errors: [] };
    const errors: ErrorObject[] = [];
    for (const validate of api.validator.getRequestValidatorsForOperation(operationId) ?? []) {
      validate(parameters);
      if (validate.errors) errors.push(...validate.errors);
      else if (coerce) {
        validation.coerced.query = parameters.query as BackendRequest['query'];
        validation.coerced.params = parameters.path as BackendRequest['params'];
      }
    }
    if (errors.length > 0) {
      validation.errors = errors;
      validation.valid = false;
      return { validation, request: parsed };
    }
    validation.errors = null;
    if (!coerce) return { validation, request: parsed };
    // The library re-parses the coerced request: the same request with the coerced query copied.
    const coercedQuery = plainQueryCopy(validation.coerced.query as Record<string, unknown>);
    return { validation, request: coercedQuery ? { ...parsed, query: coercedQuery } : api.router.parseRequest(validation.coerced, operation) };
  };
}

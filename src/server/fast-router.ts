import type { OpenAPIRouter, Operation, Request as RouterRequest } from 'openapi-backend';

/*
 * The one place the service bends openapi-backend's router (its methods are replaced on the
 * instance; the library's code is untouched).
 *
 * Why: openapi-backend rebuilds its flattened operation list (lodash over every path) on each
 * matchOperation call, twice for a templated path, and compiles a RegExp per operation for
 * templates. The contract does not change after init, so the list is built once, a request
 * whose method and path equal an operation's literal path is answered from a map, and templated
 * paths are tried with RegExps compiled once, in the library's order. 404 and 405 decisions still
 * go through the library's own matchOperation.
 *
 * Bench scenario 1 (GET /v1/org, same run, alternating rounds): the service's CPU per request is
 * ~2.8x with the library's matcher (1.61 ms against 0.58 ms); `fastRouting` below counts what it
 * matched and what it left to the library.
 *
 * Pinned by test/seams/router-parity.test.ts (`npm run test:seams`): for every operation of the
 * spec and many variants of its path and method, the fast router picks exactly what an untouched
 * router picks.
 */
export function installFastRouting(router: OpenAPIRouter): void {
  fastRouting.installed++;
  const operations = router.getOperations();
  router.getOperations = () => operations;
  const literal = new Map<string, Operation>();
  for (const op of operations) if (!op.path.includes('{')) literal.set(`${op.method} ${op.path}`, op);
  // Templated operations with their RegExp compiled once, in the order the library tries them:
  // most literal characters first, ties in spec order (lodash's orderBy is stable).
  const templated = operations
    .map((op, index) => ({ op, index, pattern: new RegExp(pathTemplateToPattern(op.path)), specificity: op.path.replace(/\{.*?\}/g, '').length }))
    .filter((t) => t.op.path.includes('{'))
    .sort((a, b) => b.specificity - a.specificity || a.index - b.index);
  const underRoot = (router as unknown as { apiRoot: string }).apiRoot === '/';
  const match = router.matchOperation.bind(router) as (req: RouterRequest, strict?: boolean) => Operation | undefined;
  const library = (req: RouterRequest, strict?: boolean) => {
    fastRouting.library++;
    return match(req, strict);
  };
  router.matchOperation = ((req: RouterRequest, strict?: boolean) => {
    const hit = literal.get(`${req.method.toLowerCase()} ${req.path}`);
    if (hit) {
      fastRouting.matched++;
      return hit;
    }
    if (!underRoot) return library(req, strict);
    // The library's steps with the patterns precompiled: an exact path with this method, else the
    // first templated path (by specificity) with this method. Anything else (404, 405) is decided
    // by the library itself.
    const normalized = router.normalizeRequest(req);
    const path = router.normalizePath(normalized.path);
    const exact = literal.get(`${normalized.method} ${path}`);
    if (exact) {
      fastRouting.matched++;
      return exact;
    }
    for (const t of templated) {
      if (t.op.method === normalized.method && t.pattern.test(path)) {
        fastRouting.matched++;
        return t.op;
      }
    }
    return library(req, strict);
  }) as typeof router.matchOperation;
}

/**
 * What the fast routers of this process did: routers installed, requests they matched, requests
 * they left to the library's matcher (404 and 405 answers; every request when the API root is not
 * `/`). Read by test/seams/fast-paths-in-production.test.ts, which fails when the service as it
 * runs in production routes a known path through the library (the slow path, ~1 ms of CPU more
 * per request).
 */
export const fastRouting = { installed: 0, matched: 0, library: 0 };

/** openapi-backend's own conversion (router.js), so a template matches exactly what it matches there. */
function pathTemplateToPattern(path: string): string {
  const escape = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return `^${path.replace(/\{[^}]+\}/g, '\0').split('\0').map(escape).join('[^/]+')}$`;
}

type ParsedRequest = ReturnType<OpenAPIRouter['parseRequest']>;
type QueryValue = string | number | boolean | null | undefined | (string | number | boolean | null)[];

/**
 * openapi-backend's parseRequest, which runs four times per request (routing, after routing,
 * inside validation, after coercion), each time cloning the query with lodash, lower-casing the
 * headers with lodash, parsing an absent cookie header, and compiling the operation's path
 * template into a RegExp. For the common request (query values that are strings, numbers,
 * booleans or arrays of them; no cookie header; a parsed or absent body) the same result is built
 * here with each operation's template compiled once; anything else goes to the library's own
 * parseRequest. Only the lean dispatch (./dispatch.ts) gains from it: behind handleRequest it
 * measured no difference. Pinned by test/seams/router-parity.test.ts (parse parity for every operation).
 * Returns the fast parse alone (see FastParse).
 */
export function installFastParsing(router: OpenAPIRouter): FastParse {
  const original = router.parseRequest.bind(router);
  const templates = new Map<string, { pattern: RegExp; names: string[] }>();
  const templateOf = (path: string) => {
    let t = templates.get(path);
    if (!t) {
      // bath-es5's conversion, which the library uses: each {name} matches one segment, decoded.
      t = { pattern: new RegExp(`^${path.replace(/\{[A-Za-z0-9_-]+\}/g, '([^\\/]*)')}$`), names: (path.match(/\{[A-Za-z0-9_-]+\}/g) ?? []).map((x) => x.slice(1, -1)) };
      templates.set(path, t);
    }
    return t;
  };
  const fast: FastParse = (req, operation) => {
    const query = typeof req.query === 'object' && req.query !== null ? plainQueryCopy(req.query as Record<string, unknown>) : undefined;
    const body = req.body;
    if (!query || (body && typeof body !== 'object')) return undefined;
    const headers: Record<string, string | string[]> = {};
    for (const name of Object.keys(req.headers)) headers[name.toLowerCase()] = req.headers[name]!;
    if (headers.cookie !== undefined) return undefined;
    const normalized = router.normalizeRequest(req);
    let params: Record<string, string> = {};
    if (operation) {
      const { pattern, names } = templateOf(operation.path);
      const match = pattern.exec(router.normalizePath(normalized.path));
      if (match) {
        let decoded: string[] | null = [];
        try {
          decoded = match.slice(1).map((value) => decodeURIComponent(value));
        } catch {
          // A malformed escape throws in the library too: let it decide.
          return undefined;
        }
        // bath-es5 answers no parameters when one name appears twice with different values.
        const clash = names.some((name, i) => names.some((other, j) => other === name && decoded![j] !== decoded![i]));
        if (!clash) params = Object.fromEntries(names.map((name, i) => [name, decoded![i]!]));
      }
      for (const name of Object.keys(query)) {
        if (!query[name]) continue;
        const parameter = operation.parameters?.find((p) => !('$ref' in p) && p?.in === 'query' && p?.name === name) as
          | { content?: Record<string, unknown>; explode?: boolean; style?: string }
          | undefined;
        if (!parameter) continue;
        if (parameter.content?.['application/json'] || parameter.explode === false) return undefined;
      }
    }
    // The library's result, `{...normalized, params, headers, query, cookies, requestBody}`, written
    // out: the requests this server builds carry these fields only (toBackendRequest, invoke, and the
    // validator's coerced copy with its params), and a spread of them was most of this function's
    // time in bench scenario 1's profile (with the two spreads of ./dispatch.ts and the log line's
    // in ./logging.ts: service CPU per request 0.268 against 0.295 ms, -9 %, one run, 12 rounds).
    return { method: normalized.method, path: normalized.path, query, body: normalized.body, headers, params, cookies: {}, requestBody: body } as ParsedRequest;
  };
  router.parseRequest = ((req: RouterRequest, operation?: Operation) => fast(req, operation) ?? original(req, operation)) as typeof router.parseRequest;
  return fast;
}

/**
 * The fast parse alone: the library's result, or undefined for a request it leaves to the
 * library (a cookie header, a raw body, a nested query, a malformed escape, a JSON or
 * non-exploded query parameter). src/server/dispatch.ts hands those requests to handleRequest.
 */
export type FastParse = (req: RouterRequest, operation?: Operation) => ParsedRequest | undefined;

/** A copy of a query whose values are primitives or arrays of primitives; undefined otherwise. */
function plainQueryCopy(query: Record<string, unknown>): Record<string, QueryValue> | undefined {
  const copy: Record<string, QueryValue> = {};
  for (const name of Object.keys(query)) {
    const value = query[name];
    if (Array.isArray(value)) {
      if (value.some((v) => v !== null && typeof v === 'object')) return undefined;
      copy[name] = value.slice();
    } else if (value !== null && typeof value === 'object') {
      return undefined;
    } else copy[name] = value as QueryValue;
  }
  return copy;
}

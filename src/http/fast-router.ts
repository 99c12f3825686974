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
 * Pinned by test/seams/router-parity.test.ts: for every operation of the spec and many variants of
 * its path and method, the fast router picks exactly what an untouched router picks.
 */
export function installFastRouting(router: OpenAPIRouter): void {
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
  router.matchOperation = ((req: RouterRequest, strict?: boolean) => {
    const hit = literal.get(`${req.method.toLowerCase()} ${req.path}`);
    if (hit || !underRoot) return hit ?? match(req, strict);
    // The library's steps with the patterns precompiled: an exact path with this method, else the
    // first templated path (by specificity) with this method. Anything else (404, 405) is decided
    // by the library itself.
    const normalized = router.normalizeRequest(req);
    const path = router.normalizePath(normalized.path);
    const exact = literal.get(`${normalized.method} ${path}`);
    if (exact) return exact;
    for (const t of templated) if (t.op.method === normalized.method && t.pattern.test(path)) return t.op;
    return match(req, strict);
  }) as typeof router.matchOperation;
}

/** openapi-backend's own conversion (router.js), so a template matches exactly what it matches there. */
function pathTemplateToPattern(path: string): string {
  const escape = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return `^${path.replace(/\{[^}]+\}/g, '\0').split('\0').map(escape).join('[^/]+')}$`;
}

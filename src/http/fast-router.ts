import type { OpenAPIRouter, Operation, Request as RouterRequest } from 'openapi-backend';

/*
 * The one place the service bends openapi-backend's router (its methods are replaced on the
 * instance; the library's code is untouched).
 *
 * Why: openapi-backend rebuilds its flattened operation list (lodash over every path) on each
 * matchOperation call, twice for a templated path, and compiles a RegExp per operation for
 * templates. The contract does not change after init, so the list is built once, and a request
 * whose method and path equal an operation's literal path is answered from a map. Everything
 * else (templated paths, 404 and 405 decisions, normalisation) still goes through the library's
 * own matchOperation, so routing decisions stay its own.
 *
 * Pinned by test/seams/router-parity.test.ts: for every operation of the spec and many variants of
 * its path and method, the fast router picks exactly what an untouched router picks.
 */
export function installFastRouting(router: OpenAPIRouter): void {
  const operations = router.getOperations();
  router.getOperations = () => operations;
  const literal = new Map<string, Operation>();
  for (const op of operations) if (!op.path.includes('{')) literal.set(`${op.method} ${op.path}`, op);
  const match = router.matchOperation.bind(router) as (req: RouterRequest, strict?: boolean) => Operation | undefined;
  router.matchOperation = ((req: RouterRequest, strict?: boolean) =>
    literal.get(`${req.method.toLowerCase()} ${req.path}`) ?? match(req, strict)) as typeof router.matchOperation;
}

import type OpenAPIBackend from 'openapi-backend';
import type { Operation } from 'openapi-backend';
import { createBackend } from '../../src/server/openapi';
import { installFastParsing, installFastRouting } from '../../src/server/fast-router';
import { fillPath, specOperations, typeIdPrefix } from '../support/spec';

/**
 * The fast router (src/server/fast-router.ts) against openapi-backend's own matcher, on requests
 * generated from the spec: for every operation, its path (templates filled with ids, with a
 * parameter value that equals a sibling's literal segment, with an encoded slash), with and
 * without a trailing slash, one segment shorter and longer, under its method and others. Both
 * routers must pick the same operation or refuse the same way (404 / 405). A new operation is
 * covered without touching this file.
 */
let pristine: OpenAPIBackend;
let fast: OpenAPIBackend;
beforeAll(async () => {
  pristine = createBackend();
  fast = createBackend();
  await Promise.all([pristine.init(), fast.init()]);
  installFastRouting(fast.router);
  installFastParsing(fast.router);
});

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'];
const operations = specOperations();

/**
 * Concrete paths for one path template: ids of the right kind, and for each parameter the values
 * that could make a literal sibling route and a templated one collide (another operation's
 * literal segment at that position, as in /v1/invitations/accept against /v1/invitations/{id}),
 * an encoded slash and a dot segment.
 */
function concretePaths(template: string, params: { name: string; schema: Record<string, unknown> }[]): string[] {
  const segments = template.split('/');
  const id = (name: string) => {
    const prefix = typeIdPrefix(params.find((p) => p.name === name)?.schema);
    return prefix ? `${prefix}_01h2xcejqtf2nbrexx3vqjhp41` : 'x1';
  };
  const names = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const values = Object.fromEntries(names.map((n) => [n, id(n)]));
  const out = [fillPath(template, values)];
  for (const name of names) {
    const at = segments.indexOf(`{${name}}`);
    const parent = segments.slice(0, at).join('/');
    const siblings = operations.map((o) => o.path.split('/')).filter((s) => s.slice(0, at).join('/') === parent && s[at] && !s[at]!.startsWith('{')).map((s) => s[at]!);
    for (const odd of [...new Set(siblings), 'a/b']) out.push(fillPath(template, { ...values, [name]: odd }));
  }
  return out;
}

function variants(path: string): string[] {
  const parent = path.slice(0, path.lastIndexOf('/')) || '/';
  return [path, `${path}/`, parent, `${path}/extra`];
}

const seen = new Map<string, string>();
function outcome(api: OpenAPIBackend, method: string, path: string): string {
  const key = `${api === fast ? 'fast' : 'pristine'} ${method} ${path}`;
  if (!seen.has(key)) seen.set(key, route(api, method, path));
  return seen.get(key)!;
}
/** Strict, as handleRequest asks: the operation, or the 404 / 405 the library throws. */
function route(api: OpenAPIBackend, method: string, path: string): string {
  try {
    const op = (api.router.matchOperation as (req: object, strict?: boolean) => Operation | undefined)({ method, path, headers: {}, query: {} }, true);
    return op ? `${op.operationId} (${op.method} ${op.path})` : 'no match';
  } catch (err) {
    return `throws ${(err as Error).message}`;
  }
}

describe.each(operations.map((op) => [`${op.method.toUpperCase()} ${op.path}`, op] as const))('%s', (_label, op) => {
  it('is routed exactly as openapi-backend routes it, for variants of its path and method', () => {
    // Every method on the operation's own path (and its own method in capitals); on the other
    // variants its own method and one it does not have, which decides between 404 and 405.
    const own = concretePaths(op.path, op.parameters);
    const cases: [string, string][] = METHODS.map((m) => [m, own[0]!]);
    cases.push([op.method.toUpperCase(), own[0]!]);
    const other = op.method === 'get' ? 'post' : 'get';
    for (const path of new Set(own.flatMap(variants))) cases.push([op.method, path], [other, path]);
    const differences: string[] = [];
    for (const [method, path] of cases) {
      const expected = outcome(pristine, method, path);
      const actual = outcome(fast, method, path);
      if (actual !== expected) differences.push(`${method} ${path}: fast router → ${actual}; openapi-backend → ${expected}`);
    }
    expect(differences).toEqual([]);
    // The operation's own path reaches it (else the cases above proved nothing about it).
    expect(outcome(pristine, op.method, own[0]!)).toBe(`${op.operationId} (${op.method} ${op.path})`);
  });
});

/**
 * The fast parse (installFastParsing) against the library's parseRequest, for every operation:
 * its paths (with an encoded slash, escaped characters) with and without the operation, queries with each declared parameter as a string, a
 * number, an array and an empty string, undeclared and nested query values, headers in mixed case,
 * a cookie header, a parsed, absent or raw body. The results must be equal.
 */
/**
 * Equal as data, as toEqual reads it: the same values, arrays item by item, objects by their
 * defined properties whatever their prototype (the library's cookies object has a class
 * prototype, and structuredClone makes objects of another realm than the test's).
 */
function sameData(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => sameData(v, (b as unknown[])[i]));
  const defined = (o: object) => Object.entries(o).filter(([, v]) => v !== undefined);
  const ea = defined(a);
  const eb = new Map(defined(b));
  return ea.length === eb.size && ea.every(([k, v]) => eb.has(k) && sameData(v, eb.get(k)));
}

describe.each(operations.map((op) => [`${op.method.toUpperCase()} ${op.path}`, op] as const))('parse %s', (_label, op) => {
  it('is parsed exactly as openapi-backend parses it', () => {
    const concrete = concretePaths(op.path, op.parameters);
    const path = concrete[0]!;
    const operation = pristine.router.getOperation(op.operationId)!;
    const declared = op.parameters.filter((p) => p.in === 'query').map((p) => p.name);
    const queries: Record<string, unknown>[] = [{}, { undeclared: 'x' }, { nested: { a: '1' } }, { list: [{ a: 1 }] }];
    for (const name of declared) queries.push({ [name]: 'abc' }, { [name]: '10' }, { [name]: 10 }, { [name]: true }, { [name]: ['a', 'b'] }, { [name]: '' }, { [name]: 'a,b' });
    const headerSets: Record<string, string>[] = [
      { authorization: 'Bearer x', 'content-type': 'application/json' },
      { Authorization: 'Bearer x', 'X-Worker-Token': 't', Accept: '*/*' },
      { cookie: 'a=1; b=2', authorization: 'Bearer x' },
    ];
    const bodies: unknown[] = [undefined, { name: 'x', nested: { list: [1, 2] } }, '{"name":"raw"}'];
    const paths = [...concrete, `${path}?ignored=1`, ` ${path} `, path.replace(/_01h2/g, '_%30%31h2')];
    const differences: string[] = [];
    for (const query of queries)
      for (const headers of headerSets)
        for (const body of bodies)
          for (const p of paths)
            for (const withOperation of [true, false]) {
              const request = () => ({ method: op.method.toUpperCase(), path: p, query: structuredClone(query), headers: { ...headers }, body: structuredClone(body) });
              const expected = pristine.router.parseRequest(request() as never, withOperation ? operation : undefined);
              const actual = fast.router.parseRequest(request() as never, withOperation ? operation : undefined);
              // A plain comparison first (microseconds); jest's toEqual only when that differs: it
              // was most of this file's time over ~2,000 comparisons per operation.
              if (sameData(actual, expected)) continue;
              try {
                expect(actual).toEqual(expected);
              } catch {
                differences.push(`${JSON.stringify(request())} (operation ${withOperation}): fast ${JSON.stringify(actual)}; openapi-backend ${JSON.stringify(expected)}`);
              }
            }
    expect(differences).toEqual([]);
  });
});

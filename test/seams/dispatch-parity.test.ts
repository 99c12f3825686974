import { isDeepStrictEqual, types } from 'node:util';
import type OpenAPIBackend from 'openapi-backend';
import type { Context, Document, Operation } from 'openapi-backend';
import { contract, createBackend, initBackend, validatorFor } from '../../src/server/openapi';
import { installFastParsing, installFastRouting } from '../../src/server/fast-router';
import { createDispatcher, type Dispatch } from '../../src/server/dispatch';
import { fillPath, idKindOf, specOperations, type Schema, type SpecOperation, type SpecParameter } from '../support/spec';
import { badValuesFor, validValue } from '../support/schema-values';

/**
 * The lean dispatcher (src/server/dispatch.ts) against openapi-backend's handleRequest on a backend
 * configured identically (the service's validator, fast routing and parsing, security handlers
 * and handlers). For every operation of the spec and variants of its request (no credential; each
 * scheme the operation accepts answering a principal, false, a throw, a rejection; valid input,
 * input wrong in each path parameter, query value and body property, query values that need
 * coercion), both must call the same handler with an equal context: request, security, validation,
 * what postRouting wrote. A second pass gives every operation security requirements and query
 * parameters the spec does not use yet (AND requirements, a scheme twice, a scheme without a
 * handler, an optional credential; booleans and arrays). A new operation is covered without
 * touching this file, and one it cannot build a request for fails.
 */
const operations = specOperations();
const schemeNames = Object.keys(contract.components?.securitySchemes ?? {});
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** How a stub security handler answers, chosen per request by its header `x-test-<scheme>`. */
const MODES = ['ok', 'sync', 'false', 'throw', 'reject', 'null', 'error-null'] as const;

function stubSecurityHandler(name: string) {
  return (c: Context): unknown => {
    const principal = { kind: 'user', scheme: name, operationId: c.operation.operationId };
    switch (c.request.headers[`x-test-${name.toLowerCase()}`]) {
      case 'ok':
        return Promise.resolve(principal);
      case 'sync':
        return principal;
      case 'throw':
        throw new Error(`${name} threw`);
      case 'reject':
        return Promise.reject(new Error(`${name} rejected`));
      case 'null':
        // The library stores a stand-in error for a falsy reason.
        return Promise.reject(null);
      case 'error-null':
        return { ...principal, error: null };
      default:
        return false;
    }
  };
}

interface FakeResponse {
  locals: Record<string, unknown>;
}

/** What a handler was handed, copied when it was called. */
interface Call {
  handler: string;
  contextKeys: string[];
  ownApi: boolean;
  ownArgs: boolean;
  operationId: string | undefined;
  request: unknown;
  security: unknown;
  validation: unknown;
  locals: unknown;
}

interface Side {
  api: OpenAPIBackend;
  calls: Call[];
}

interface Pair {
  reference: Side;
  lean: Side;
  dispatch: Dispatch;
  /** Requests the lean path handed to the library's handleRequest. */
  fallbacks: number;
}

const REQ = { id: 'request' };

/**
 * A deep copy taken when a handler is called, with each error as its name and message: jest
 * compares an error of another realm (node's own) by its enumerable keys, which hide the message.
 */
function copy(value: unknown): unknown {
  if (types.isNativeError(value)) return { copiedError: `${value.name}: ${value.message}` };
  if (Array.isArray(value)) return value.map(copy);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copy(v)]));
  return value;
}

async function side(definition: Document, validator: 'service' | 'own'): Promise<Side & { parse: ReturnType<typeof installFastParsing> }> {
  const api = createBackend(definition);
  const calls: Call[] = [];
  for (const name of schemeNames) api.registerSecurityHandler(name, stubSecurityHandler(name));
  const spy = (handler: string) => (c: Context, req: unknown, res: FakeResponse) => {
    calls.push(
      copy({
        handler,
        contextKeys: Object.keys(c).sort(),
        ownApi: c.api === api,
        ownArgs: req === REQ && 'locals' in res,
        operationId: c.operation?.operationId,
        request: c.request,
        security: c.security,
        validation: c.validation,
        locals: res.locals,
      }) as Call,
    );
    return { handled: handler };
  };
  api.register({
    postRoutingHandler: (c: Context, _req: unknown, res: FakeResponse) => {
      if (!c.operation) return;
      res.locals.route = `${c.operation.method.toUpperCase()} ${c.operation.path}`;
      res.locals.operationId = c.operation.operationId;
    },
    unauthorizedHandler: spy('unauthorizedHandler'),
    validationFail: spy('validationFail'),
    notFound: spy('notFound'),
    methodNotAllowed: spy('methodNotAllowed'),
  });
  if (validator === 'service') await initBackend(api, { compileRequestValidators: false, compileResponseValidators: false });
  else {
    // The service's validator is built once per process, from the contract; a variant needs its own.
    await api.init();
    api.validator = validatorFor(api);
    api.validate = true;
  }
  for (const op of api.router.getOperations()) api.register(op.operationId!, spy(op.operationId!));
  installFastRouting(api.router);
  return { api, calls, parse: installFastParsing(api.router) };
}

async function buildPair(definition: Document, validator: 'service' | 'own'): Promise<Pair> {
  const reference = await side(definition, validator);
  const lean = await side(definition, validator);
  const pair: Pair = { reference, lean, dispatch: createDispatcher(lean.api, lean.parse), fallbacks: 0 };
  const handleRequest = lean.api.handleRequest.bind(lean.api);
  lean.api.handleRequest = (...args) => {
    pair.fallbacks++;
    return handleRequest(...args);
  };
  return pair;
}

interface Variant {
  label: string;
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  body?: unknown;
}

interface Outcome {
  /** What each side's handler was handed, and what the call answered. */
  reference: Call & { returned: unknown };
  lean: Call & { returned: unknown };
  /** The lean path handed the request to handleRequest. */
  fellBack: boolean;
  /** Our middleware's match (what src/server/router.ts hands the dispatcher). */
  matched: Operation | undefined;
}

async function run(pair: Pair, v: Variant): Promise<Outcome> {
  // Coercion writes into the request: each side gets its own copy.
  const request = () => ({ method: v.method, path: v.path, query: structuredClone(v.query), headers: { ...v.headers }, body: structuredClone(v.body) });
  const before = { reference: pair.reference.calls.length, lean: pair.lean.calls.length, fallbacks: pair.fallbacks };
  const expected: unknown = await pair.reference.api.handleRequest(request(), REQ, { locals: {} });
  const matched = pair.lean.api.router.matchOperation({ method: v.method, path: v.path } as never);
  const actual = await pair.dispatch(request(), matched, REQ, { locals: {} });
  const reference = pair.reference.calls.slice(before.reference);
  const lean = pair.lean.calls.slice(before.lean);
  if (reference.length !== 1 || lean.length !== 1) throw new Error(`${v.label}: ${reference.length} reference calls, ${lean.length} lean calls`);
  return { reference: { ...reference[0]!, returned: expected }, lean: { ...lean[0]!, returned: actual }, fellBack: pair.fallbacks > before.fallbacks, matched };
}

const noIds = () => undefined;

/** A query value as Express hands it over: a string, or an array of strings. */
function asQuery(name: string, value: unknown): string | string[] {
  if (Array.isArray(value)) return value.map((v) => String(v));
  if (value !== null && typeof value === 'object') throw new Error(`cannot build a query value for ${name}: ${JSON.stringify(value)}`);
  return String(value);
}

/** Values from test/support/schema-values.ts, made once per schema (the two passes share the spec's schemas). */
function once<T>(make: (schema: Schema) => T): (schema: Schema) => T {
  const made = new WeakMap<Schema, T>();
  return (schema) => {
    if (!made.has(schema)) made.set(schema, make(schema));
    return made.get(schema)!;
  };
}
const valid = once((schema) => validValue(schema, noIds));
const invalid = once((schema) => badValuesFor(schema));
/** Not the 10k-item arrays: they test the validator's limits (validator-parity.test.ts), not the dispatch. */
const fewInvalid = once((schema) => invalid(schema).filter((bad) => !(Array.isArray(bad.value) && bad.value.length > 100)).slice(0, 3));

function variantsFor(op: SpecOperation, operation: Operation, extra: SpecParameter[]): Variant[] {
  const requirements = (operation.security ?? []).map((r) => Object.keys(r));
  const schemes = [...new Set(requirements.flat())];
  const credential = Object.fromEntries((requirements[0] ?? []).map((s) => [`x-test-${s.toLowerCase()}`, 'ok']));
  const params: Record<string, string> = {};
  for (const p of op.parameters.filter((x) => x.in === 'path')) {
    const kind = idKindOf(p.schema);
    params[p.name] = kind && kind !== 'external' ? `${kind}_01h2xcejqtf2nbrexx3vqjhp41` : String(valid(p.schema));
  }
  const queryParams = [...op.parameters, ...extra].filter((x) => x.in === 'query');
  const headerParams = [...op.parameters, ...extra].filter((x) => x.in === 'header');
  const query = Object.fromEntries(queryParams.map((p) => [p.name, asQuery(p.name, valid(p.schema))]));
  const headerValues = Object.fromEntries(headerParams.map((p) => [p.name.toLowerCase(), String(valid(p.schema))]));
  // The body in the media type the library validates (JSON first, then a form), as parsed by Express.
  const content = (operation.requestBody as { content?: Record<string, { schema?: Schema }> } | undefined)?.content ?? {};
  const mediaType = ['application/json', 'multipart/form-data', 'application/x-www-form-urlencoded'].find((t) => content[t]?.schema);
  if (Object.keys(content).length > 0 && !mediaType) throw new Error(`cannot build a body for ${op.operationId}: ${Object.keys(content).join(', ')}`);
  const bodySchema = mediaType === 'application/json' && op.body ? op.body.schema : mediaType ? content[mediaType]!.schema! : undefined;
  const headers = { 'content-type': mediaType ?? 'application/json', ...headerValues };
  const body = bodySchema ? valid(bodySchema) : undefined;
  const base: Variant = { label: 'valid', method: op.method, path: fillPath(op.path, params), query, headers: { ...headers, ...credential }, body };
  const out: Variant[] = [base];
  const requiredQuery = Object.fromEntries(Object.entries(query).filter(([name]) => queryParams.find((p) => p.name === name)!.required));
  out.push({ ...base, label: 'valid, required query only', query: requiredQuery });
  for (const [name, value] of Object.entries(query)) if (Array.isArray(value)) out.push({ ...base, label: `query.${name} given once`, query: { ...query, [name]: value[0] ?? '1' } });

  out.push({ ...base, label: 'no credential', headers });
  for (const scheme of schemes) for (const mode of MODES) out.push({ ...base, label: `${scheme}: ${mode}`, headers: { ...headers, [`x-test-${scheme.toLowerCase()}`]: mode } });
  const every = Object.fromEntries(schemes.map((s) => [`x-test-${s.toLowerCase()}`, 'ok']));
  out.push({ ...base, label: 'every scheme ok', headers: { ...headers, ...every } });
  for (const scheme of schemes) {
    for (const mode of ['false', 'throw']) out.push({ ...base, label: `every scheme ok but ${scheme}: ${mode}`, headers: { ...headers, ...every, [`x-test-${scheme.toLowerCase()}`]: mode } });
  }

  for (const p of op.parameters.filter((x) => x.in === 'path')) {
    for (const v of ['', 'a'.repeat(600), 'usr_01h2xcejqtf2nbrexx3vqjhp41']) out.push({ ...base, label: `path.${p.name} = ${v.slice(0, 20)}`, path: fillPath(op.path, { ...params, [p.name]: v }) });
  }
  for (const p of queryParams) {
    for (const bad of invalid(p.schema)) {
      if (typeof bad.value !== 'string' && typeof bad.value !== 'number' && !Array.isArray(bad.value)) continue;
      if (Array.isArray(bad.value) && bad.value.some((x) => typeof x === 'object')) continue;
      out.push({ ...base, label: `query.${p.name}: ${bad.label}`, query: { ...query, [p.name]: asQuery(p.name, bad.value) } });
    }
  }
  for (const p of headerParams) {
    for (const bad of invalid(p.schema)) {
      if (typeof bad.value === 'string' || typeof bad.value === 'number') out.push({ ...base, label: `header ${p.name}: ${bad.label}`, headers: { ...base.headers, [p.name.toLowerCase()]: String(bad.value) } });
    }
  }
  const { 'content-type': _contentType, ...withoutContentType } = base.headers;
  out.push(
    { ...base, label: 'a content type with a charset', headers: { ...base.headers, 'content-type': `${mediaType ?? 'application/json'}; charset=utf-8` } },
    { ...base, label: 'no content type, no body', headers: withoutContentType, body: undefined },
    { ...base, label: 'an empty raw body', body: '' },
  );
  if (bodySchema) {
    const props = Object.keys(bodySchema.properties ?? {});
    out.push({ ...base, label: 'body missing', body: undefined }, { ...base, label: 'body an array', body: [body] }, { ...base, label: 'extra field', body: { ...(body as object), extra: 1 } });
    for (const name of props) {
      for (const bad of fewInvalid(bodySchema.properties![name]!)) out.push({ ...base, label: `body.${name}: ${bad.label}`, body: { ...(body as object), [name]: bad.value } });
    }
  }
  // The fast parse leaves a cookie header to the library, and so does the lean path.
  out.push({ ...base, label: 'a cookie header', headers: { ...base.headers, cookie: 'a=1' } });
  return out;
}

async function compare(pair: Pair, op: SpecOperation, extra: SpecParameter[] = []): Promise<void> {
  const operation = pair.lean.api.router.getOperation(op.operationId);
  if (!operation) throw new Error(`${op.operationId} is not an operation of the backend`);
  const requirements = (operation.security ?? []).map((r) => Object.keys(r));
  const differences: string[] = [];
  const reached = new Map<string, string>();
  for (const v of variantsFor(op, operation, extra)) {
    const { reference, lean, fellBack, matched } = await run(pair, v);
    reached.set(v.label, reference.handler);
    try {
      // Node's strict deep equality first (both sides are copy()'s plain data); jest's
      // toStrictEqual, for its message, only when that differs: it was a third of this file's time.
      if (!isDeepStrictEqual(lean, reference)) expect(lean).toStrictEqual(reference);
    } catch (err) {
      differences.push(`${v.label}: ${(err as Error).message.slice(0, 1500)}`);
    }
    const shouldFallBack = !matched || 'cookie' in v.headers;
    if (fellBack !== shouldFallBack) differences.push(`${v.label}: the lean path ${fellBack ? 'handed the request to' : 'did not hand the request to'} handleRequest`);
  }
  expect(differences).toEqual([]);
  // The variants reached what they were built to reach, or the comparison proved little.
  expect(reached.get('valid')).toBe(op.operationId);
  const open = requirements.length === 0 || requirements.some((r) => r.length === 0);
  expect(reached.get('no credential')).toBe(open ? op.operationId : 'unauthorizedHandler');
  if (operation.requestBody || op.parameters.some((p) => p.in !== 'header')) expect([...reached.values()]).toContain('validationFail');
}

describe('the spec as it is', () => {
  let pair: Pair;
  beforeAll(async () => {
    pair = await buildPair(contract, 'service');
  }, 60_000);

  it.each(operations.map((op) => [op.operationId, op] as const))('%s: the lean dispatcher calls what handleRequest calls, with an equal context', async (_id, op) => {
    await compare(pair, op);
  });

  it('hands a request without a matched operation to the library (404, 405)', async () => {
    const op = operations[0]!;
    const missing = await run(pair, { label: '404', method: 'get', path: '/v1/no-such-route/x', query: {}, headers: {} });
    expect(missing.lean).toStrictEqual(missing.reference);
    expect([missing.reference.handler, missing.fellBack]).toEqual(['notFound', true]);
    const path = fillPath(op.path, Object.fromEntries(op.parameters.filter((p) => p.in === 'path').map((p) => [p.name, 'x1'])));
    const method = METHODS.find((m) => !operations.some((o) => o.path === op.path && o.method === m))!;
    const wrongMethod = await run(pair, { label: '405', method, path, query: {}, headers: {} });
    expect(wrongMethod.lean).toStrictEqual(wrongMethod.reference);
    expect([wrongMethod.reference.handler, wrongMethod.fellBack]).toEqual(['methodNotAllowed', true]);
  });
});

/**
 * The same comparison on a variant of the contract: each operation gets one of these security
 * requirement lists (taking turns) and optional query and header parameters that need coercion,
 * and one operation is added with an integer path parameter.
 */
describe('security requirements and parameters the spec does not use yet', () => {
  const [a, b, c] = schemeNames;
  const SHAPES = [
    [{ [a!]: [], [b!]: [] }, { [c!]: [] }], // AND within OR
    [{ [a!]: [] }, { [a!]: [], [c!]: [] }, { unregisteredScheme: [] }], // a scheme twice, one without a handler
    [{}, { [b!]: [] }], // an optional credential
  ];
  const EXTRA: SpecParameter[] = [
    { name: 'x_flag', in: 'query', required: false, schema: { type: 'boolean' } },
    { name: 'x_counts', in: 'query', required: false, schema: { type: 'array', items: { type: 'integer', minimum: 0 }, maxItems: 3 } },
    { name: 'X-Count', in: 'header', required: false, schema: { type: 'integer', minimum: 0 } },
  ];
  const integerPath: SpecOperation = {
    ...operations[0]!,
    operationId: 'syntheticIntegerPath',
    method: 'get',
    path: '/v1/synthetic/{count}',
    parameters: [{ name: 'count', in: 'path', required: true, schema: { type: 'integer', minimum: 0 } }],
    body: null,
  };
  let pair: Pair;
  beforeAll(async () => {
    const doc = structuredClone(contract) as unknown as { paths: Record<string, Record<string, { security?: unknown; parameters?: unknown[]; [key: string]: unknown }>> };
    doc.paths[integerPath.path] = { get: { operationId: integerPath.operationId, parameters: integerPath.parameters, responses: { 200: { description: 'ok' } } } };
    let turn = 0;
    for (const item of Object.values(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        op.security = SHAPES[turn++ % SHAPES.length];
        op.parameters = [...(op.parameters ?? []), ...EXTRA];
      }
    }
    pair = await buildPair(doc as unknown as Document, 'own');
  }, 60_000);

  it('has three security schemes to combine', () => {
    expect(schemeNames.length).toBeGreaterThanOrEqual(3);
  });

  it.each([...operations, integerPath].map((op) => [op.operationId, op] as const))('%s: the lean dispatcher calls what handleRequest calls, with an equal context', async (_id, op) => {
    await compare(pair, op, EXTRA);
  });
});

import OpenAPIBackend from 'openapi-backend';
import { contract, createBackend, initBackend } from '../../src/server/openapi';
import { createAjv } from '../../src/server/validator';
import { fillPath, idKindOf, specOperations, type SpecOperation } from '../support/spec';
import { badValuesFor, concrete, validValue } from '../support/schema-values';

/**
 * The validator the service installs after init (src/server/openapi.ts `initBackend`: request
 * validators compiled at start, response validators only when responses are checked) against
 * the validator openapi-backend's own init builds from the same options. For every operation of
 * the spec, a valid request and requests wrong in one path parameter, query value or body
 * property get the same verdict and the same errors from both. A new operation is covered
 * without touching this file.
 */
let ours: OpenAPIBackend;
let library: OpenAPIBackend;
beforeAll(async () => {
  ours = await initBackend(createBackend(), { compileResponseValidators: false });
  // The library's own validator, built by its init (`quick` only defers compiling to first use).
  library = new OpenAPIBackend({
    definition: structuredClone(contract),
    strict: true,
    validate: true,
    quick: true,
    coerceTypes: true,
    ignoreTrailingSlashes: false,
    customizeAjv: (_ajv, options) => createAjv(options),
  });
  library.validateDefinition = () => library.document;
  await library.init();
}, 120_000);

const operations = specOperations();
const noIds = () => undefined;

interface Req {
  label: string;
  method: string;
  path: string;
  query: Record<string, string>;
  body?: unknown;
  headers: Record<string, string>;
}

function requestsFor(op: SpecOperation): Req[] {
  const params: Record<string, string> = {};
  for (const p of op.parameters.filter((x) => x.in === 'path')) {
    const kind = idKindOf(p.schema);
    params[p.name] = kind && kind !== 'external' ? `${kind}_01h2xcejqtf2nbrexx3vqjhp41` : String(validValue(p.schema, noIds));
  }
  const query: Record<string, string> = {};
  for (const p of op.parameters.filter((x) => x.in === 'query' && x.required)) query[p.name] = String(validValue(p.schema, noIds));
  const body = op.body ? (validValue(op.body.schema, noIds) as Record<string, unknown>) : undefined;
  const base: Req = { label: 'valid', method: op.method, path: fillPath(op.path, params), query, body, headers: { 'content-type': 'application/json' } };
  const out = [base];
  for (const p of op.parameters.filter((x) => x.in === 'path')) {
    for (const v of ['', 'a'.repeat(600), 'usr_01h2xcejqtf2nbrexx3vqjhp41']) out.push({ ...base, label: `path.${p.name} = ${v.slice(0, 20)}`, path: fillPath(op.path, { ...params, [p.name]: v }) });
  }
  for (const p of op.parameters.filter((x) => x.in === 'query')) {
    for (const bad of badValuesFor(p.schema).filter((b) => typeof b.value === 'string' || typeof b.value === 'number')) {
      out.push({ ...base, label: `query.${p.name}: ${bad.label}`, query: { ...query, [p.name]: String(bad.value) } });
    }
  }
  if (op.body) {
    out.push({ ...base, label: 'body missing', body: undefined }, { ...base, label: 'body an array', body: [body] }, { ...base, label: 'extra field', body: { ...body, extra: 1 } });
    for (const [name, schema] of Object.entries(concrete(op.body.schema).properties ?? {})) {
      for (const bad of badValuesFor(schema).slice(0, 3)) out.push({ ...base, label: `body.${name}: ${bad.label}`, body: { ...body, [name]: bad.value } });
    }
  }
  return out;
}

function verdict(api: OpenAPIBackend, op: SpecOperation, req: Req): string {
  // Coercion writes into the request: each validator gets its own copy.
  const copy = structuredClone({ method: req.method, path: req.path, query: req.query, body: req.body, headers: req.headers });
  const result = api.validator.validateRequest(copy, op.operationId);
  return result.valid ? 'valid' : JSON.stringify(result.errors);
}

it('compiles every request validator at start (a broken schema fails the start, not a request)', () => {
  const compiled = (ours.validator as unknown as { requestValidators: Record<string, unknown> }).requestValidators;
  expect(operations.filter((op) => !compiled[op.operationId]).map((op) => op.operationId)).toEqual([]);
});

// Test apps compile validators on first use (compileValidatorsAtStart: false); this is where a
// response schema that does not compile fails, for every operation.
it('compiles every response validator when asked to', async () => {
  const api = await initBackend(createBackend(), { compileResponseValidators: true });
  const compiled = (api.validator as unknown as { statusBasedResponseValidators: Record<string, unknown> }).statusBasedResponseValidators;
  expect(operations.filter((op) => !(op.operationId in compiled)).map((op) => op.operationId)).toEqual([]);
});

describe.each(operations.map((op) => [op.operationId, op] as const))('%s', (_id, op) => {
  it('gets the same verdict and errors from the installed validator as from openapi-backend’s own', () => {
    const differences: string[] = [];
    let refused = 0;
    for (const req of requestsFor(op)) {
      const expected = verdict(library, op, req);
      const actual = verdict(ours, op, req);
      if (actual !== expected) differences.push(`${req.label}: installed → ${actual.slice(0, 200)}; openapi-backend → ${expected.slice(0, 200)}`);
      if (expected !== 'valid') refused++;
    }
    expect(differences).toEqual([]);
    // Something was refused, or the comparison proved nothing (operations without input excepted).
    if (op.body || op.parameters.length > 0) expect(refused).toBeGreaterThan(0);
  });
});

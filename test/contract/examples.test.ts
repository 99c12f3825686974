import type { ValidateFunction } from 'ajv';
import { createAjv } from '../../src/server/validator';
import { loadContract } from '../support/spec';
import { deref } from '../../scripts/error-contract';

/**
 * Every example of the contract is one a person could paste: the reference page (/docs) shows
 * them instead of values it would make up from the schemas.
 *
 * The rule, for every operation of the bundled contract (generated/openapi.json):
 * - every parameter (path, query, header; its own or its path's) has an `example`, `examples`,
 *   or a schema whose top level (after its `$ref`s) has an `example`;
 * - every media type of a request body and of a response (success and error, including the
 *   shared ones of components/responses) has an `example`, `examples`, or a schema whose top
 *   level has an `example`. Examples composed from property-level ones do not count: Swagger UI
 *   would fill what they leave out with made-up values.
 * Each example found (all of them, not only the one the rule needs), and the example of every
 * named schema (components.schemas), must hold no `$ref` key (openapi-backend dereferences the
 * whole document at start and would try to fetch it) and must validate against its own schema with the service's AJV (src/server/validator.ts: JSON Schema 2020-12, ajv-formats, the
 * `typeid` format), without type coercion: an example shows the value's real JSON type.
 */
type Json = Record<string, unknown>;
type Doc = { paths: Record<string, Record<string, unknown>>; components?: Json };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

const resolve = (doc: Doc, value: unknown): Json => deref(doc, value);

/** The examples one parameter or media type offers, by where they are written. */
function examplesOf(doc: Doc, holder: Json): Array<{ where: string; value: unknown }> {
  const found: Array<{ where: string; value: unknown }> = [];
  if (holder.example !== undefined) found.push({ where: 'example', value: holder.example });
  for (const [name, entry] of Object.entries((holder.examples ?? {}) as Record<string, Json>)) {
    const resolved = resolve(doc, entry);
    if (resolved.value !== undefined) found.push({ where: `examples.${name}`, value: resolved.value });
  }
  const schema = resolve(doc, holder.schema);
  if (schema?.example !== undefined) found.push({ where: 'schema.example', value: schema.example });
  return found;
}

/** A `$ref` key anywhere in a value: the service's dereferencer (openapi-backend) would follow it. */
function refKeyIn(value: unknown, at = ''): string | null {
  if (value === null || typeof value !== 'object') return null;
  for (const [key, inner] of Object.entries(value)) {
    if (key === '$ref') return `${at}/$ref`;
    const found = refKeyIn(inner, `${at}/${key}`);
    if (found) return found;
  }
  return null;
}

const CONTRACT_ID = 'https://contract.invalid/openapi.json';

/** A copy of a schema whose local references (`#/components/...`) name the contract added to AJV. */
function refsToContract(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(refsToContract);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [key, key === '$ref' && typeof inner === 'string' && inner.startsWith('#/') ? `${CONTRACT_ID}${inner}` : refsToContract(inner)]),
  );
}

/** Every place the rule applies to: `where` names it for a failure message. */
export function exampleProblems(doc: Doc): { problems: string[]; checked: number } {
  const ajv = createAjv({});
  // The schema's `#/components/...` references resolve inside the contract it came from: the
  // components are added once, and each schema's references point there. (Compiling each schema
  // with the components beside it made AJV walk all of them for every schema: ~30 s.)
  ajv.addSchema({ $id: CONTRACT_ID, components: doc.components });
  const cache = new Map<unknown, ValidateFunction>();
  const validatorFor = (schema: Json): ValidateFunction => {
    let validate = cache.get(schema);
    if (!validate) {
      validate = ajv.compile(refsToContract(schema) as Json);
      cache.set(schema, validate);
    }
    return validate;
  };
  const problems: string[] = [];
  let checked = 0;
  const check = (where: string, holder: Json) => {
    const examples = examplesOf(doc, holder);
    if (examples.length === 0) {
      problems.push(`${where}: no example`);
      return;
    }
    const schema = (holder.schema ?? {}) as Json;
    for (const example of examples) {
      checked++;
      const ref = refKeyIn(example.value);
      if (ref) problems.push(`${where} ${example.where}: a $ref key at ${ref} (the contract's dereferencer would fetch it)`);
      const validate = validatorFor(schema);
      if (!validate(example.value)) {
        const errors = (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || '/'} ${e.message}`);
        problems.push(`${where} ${example.where}: ${errors.join('; ')}`);
      }
    }
  };
  for (const [p, rawItem] of Object.entries(doc.paths)) {
    const item = resolve(doc, rawItem);
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const at = `${method.toUpperCase()} ${p}`;
      for (const raw of [...((item.parameters ?? []) as Json[]), ...((op.parameters ?? []) as Json[])]) {
        const param = resolve(doc, raw);
        check(`${at} ${String(param.in)} parameter ${String(param.name)}`, param);
      }
      if (op.requestBody) {
        const body = resolve(doc, op.requestBody);
        for (const [type, media] of Object.entries((body.content ?? {}) as Record<string, Json>)) check(`${at} request body ${type}`, media);
      }
      for (const [status, raw] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
        const response = resolve(doc, raw);
        for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, Json>)) check(`${at} ${status} ${type}`, media);
      }
    }
  }
  // Examples on named schemas are shown wherever the schema is used (Swagger UI composes them).
  for (const [name, schema] of Object.entries((doc.components?.schemas ?? {}) as Record<string, Json>)) {
    if (schema.example === undefined) continue;
    checked++;
    const ref = refKeyIn(schema.example);
    if (ref) problems.push(`components.schemas.${name} example: a $ref key at ${ref} (the contract's dereferencer would fetch it)`);
    const validate = validatorFor(schema);
    if (!validate(schema.example)) problems.push(`components.schemas.${name} example: ${(validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ')}`);
  }
  return { problems, checked };
}

function operation(doc: Doc, p: string, method: string): Json {
  return doc.paths[p]![method] as Json;
}

describe('examples in the contract', () => {
  const doc = loadContract() as Doc;

  it('has an example for every parameter, request body and response, each valid against its own schema', () => {
    const { problems, checked } = exampleProblems(doc);
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(1000);
  });

  it('fails on an example that does not validate, and on a place without one', () => {
    // Two operations of the contract, one example broken and one taken away.
    const broken = structuredClone({ ...doc, paths: { '/v1/org': doc.paths['/v1/org']!, '/v1/invitations': doc.paths['/v1/invitations']! } });
    const getOrg = resolve(broken, operation(broken, '/v1/org', 'get'));
    const ok = (getOrg.responses as Record<string, Json>)['200']!;
    const media = (ok.content as Record<string, Json>)['application/json']!;
    const example = structuredClone(media.example ?? resolve(broken, media.schema).example) as { organization: Json };
    example.organization.id = 'org_not-a-typeid';
    media.example = example;
    const invite = resolve(broken, operation(broken, '/v1/invitations', 'post'));
    const body = ((invite.requestBody as Json).content as Record<string, Json>)['application/json']!;
    delete body.example;
    delete body.examples;
    body.schema = { ...resolve(broken, body.schema), example: undefined };

    const { problems } = exampleProblems(broken);
    expect(problems).toEqual([
      expect.stringMatching(/^GET \/v1\/org 200 application\/json example: .*\/organization\/id must match format "typeid"/),
      'POST /v1/invitations request body application/json: no example',
    ]);
  });

  it('fails on a $ref key inside an example', () => {
    const media = { schema: { type: 'object' }, example: { members: [{ value: 'x', $ref: 'https://control.example.com/scim/v2/Users/x' }] } };
    const { problems } = exampleProblems({ paths: { '/x': { get: { responses: { '200': { description: 'x', content: { 'application/json': media } } } } } } });
    expect(problems).toEqual(["GET /x 200 application/json example: a $ref key at /members/0/$ref (the contract's dereferencer would fetch it)"]);
  });
});

import fc from 'fast-check';
import type { Response } from 'supertest';
import type { TestApp } from '../support/app';
import { createAjv } from '../../src/server/validator';
import { fillPath, type SpecOperation, type Schema } from '../support/spec';
import { badValuesFor, concrete, deepNesting, validArbitrary, validValue, type IdFor } from '../support/schema-values';
import { pathValues, prefixForParam, type OrgWorld } from './world';

/** One generated request. `expectPath` is where a 400's details must point (a prefix of a detail's path). */
export interface GenRequest {
  label: string;
  method: SpecOperation['method'];
  url: string;
  query?: Record<string, string>;
  /** Sent as it is after `?` (supertest's .query() would encode it), e.g. a malformed encoding. */
  rawQuery?: string;
  headers?: Record<string, string>;
  body?: unknown;
  raw?: { contentType: string; data: Buffer | string };
  expectPath?: string[];
  /** Also accepted: a 400 naming the body (the handler checked a rule of the body before looking the id up). */
  orBody?: boolean;
}

/** A truncated UTF-8 sequence: decodeURIComponent throws on it (issue: it used to answer 500). */
export const MALFORMED_ENCODING = '%E0%A4%A';

/** Requests per operation in the bad-input suite (deterministic; the seed is fixed). */
export const BAD_REQUESTS_PER_OPERATION = 20;
export const SEED = 20261122;

export function idsOf(world: OrgWorld): IdFor {
  return (prefix) => world.ids[prefix]?.[0];
}

/**
 * The world owner's credential for the operation's security: none for a public operation, the
 * world's worker token for a worker operation, the owner's session otherwise.
 */
export function ownerCredential(op: SpecOperation, world: OrgWorld): Record<string, string> {
  if (op.auth === 'public') return {};
  if (op.auth === 'worker') {
    const token = Object.entries(world.secrets).find(([name]) => name.endsWith('.workerToken'))?.[1];
    if (!token) throw new Error(`${op.operationId} needs a worker token, and the world has none`);
    return { 'x-worker-token': token };
  }
  if (op.auth === 'scim') return { authorization: `Bearer ${world.scimToken}` };
  return { authorization: `Bearer ${world.owner.token}` };
}

export function send(t: TestApp, req: GenRequest, auth: Record<string, string> = {}): Promise<Response> {
  let r = t.http[req.method](req.rawQuery === undefined ? req.url : `${req.url}?${req.rawQuery}`);
  for (const [k, v] of Object.entries({ ...auth, ...req.headers })) r = r.set(k, v);
  if (req.query && req.rawQuery === undefined) r = r.query(req.query);
  if (req.raw) return r.set('content-type', req.raw.contentType).send(req.raw.data as never);
  if (req.body !== undefined) return r.send(req.body as never);
  return r;
}

/** A valid request for the operation in the world's organization (random but valid body and query). */
export function validRequest(op: SpecOperation, world: OrgWorld, seed = SEED): GenRequest {
  const query: Record<string, string> = {};
  for (const p of op.parameters.filter((x) => x.in === 'query' && x.required)) query[p.name] = String(validValue(p.schema, idsOf(world), seed));
  return {
    label: 'valid',
    method: op.method,
    url: fillPath(op.path, pathValues(op, world)),
    query,
    body: op.body ? validValue(op.body.schema, idsOf(world), seed) : undefined,
  };
}

const ajv = createAjv({});
const validators = new Map<string, (v: unknown) => boolean>();
function bodyValidator(op: SpecOperation): (v: unknown) => boolean {
  if (!validators.has(op.operationId)) validators.set(op.operationId, ajv.compile(op.body!.schema) as (v: unknown) => boolean);
  return validators.get(op.operationId)!;
}

/** Bodies that make the valid one invalid at one property, drawn with fast-check and kept only when the contract's own validator refuses them. */
function randomBadBodies(op: SpecOperation, base: Record<string, unknown>, count: number): GenRequest[] {
  const props = Object.keys(concrete(op.body!.schema).properties ?? {});
  if (props.length === 0) return [];
  const valid = bodyValidator(op);
  const arb = fc.tuple(fc.constantFrom(...props), fc.jsonValue({ maxDepth: 3 }));
  const out: GenRequest[] = [];
  for (const [prop, value] of fc.sample(arb, { seed: SEED, numRuns: count * 6 })) {
    const body = { ...base, [prop]: value };
    if (valid(body)) continue;
    out.push({ label: `body.${prop} = random ${JSON.stringify(value).slice(0, 40)}`, method: op.method, url: '', body, expectPath: ['body'] });
    if (out.length >= count) break;
  }
  return out;
}

/**
 * Invalid requests for one operation, from its schema: path ids of the wrong kind or length,
 * query values out of range, bodies of the wrong type, missing and extra fields, strings past
 * their limits, wrong TypeIDs, huge arrays, deep nesting, malformed JSON, invalid UTF-8, a wrong
 * content type and an oversize body. At most BAD_REQUESTS_PER_OPERATION, spread over the kinds.
 */
export function badRequests(op: SpecOperation, world: OrgWorld, bodyLimitBytes: number): GenRequest[] {
  const values = pathValues(op, world);
  const url = fillPath(op.path, values);
  // Path and query cases carry a valid body, so the parameter is the only thing wrong.
  const validBody = op.body ? (validValue(op.body.schema, idsOf(world), SEED) as Record<string, unknown>) : undefined;
  const requiredQuery: Record<string, string> = {};
  for (const p of op.parameters.filter((x) => x.in === 'query' && x.required)) requiredQuery[p.name] = String(validValue(p.schema, idsOf(world), SEED));
  const base: GenRequest = { label: '', method: op.method, url, body: validBody, query: requiredQuery, orBody: validBody !== undefined };
  const groups: GenRequest[][] = [];

  // Path parameters.
  for (const param of op.parameters.filter((p) => p.in === 'path')) {
    const good = values[param.name]!;
    const typed = prefixForParam(op, param);
    // A malformed percent-encoding goes into the URL as it is (fillPath would encode it).
    const malformed = fillPath(op.path, { ...values, [param.name]: 'MALFORMED' }).replace('MALFORMED', MALFORMED_ENCODING);
    const cases: [string, string][] = [
      ['wrong prefix', good.replace(/^[a-z]+_/, typed === 'usr' ? 'org_' : 'usr_')],
      ['one character short', good.slice(0, -1)],
      ['300 characters', 'a'.repeat(300)],
      ['a NUL and a quote', "x\u0000'\"--"],
    ];
    groups.push([
      { ...base, label: `path.${param.name}: malformed percent-encoding`, url: malformed, expectPath: ['path', param.name] },
      ...cases.map(([label, v]) => ({ ...base, label: `path.${param.name}: ${label}`, url: fillPath(op.path, { ...values, [param.name]: v }), expectPath: ['path', param.name] })),
    ]);
  }

  // Query parameters.
  for (const param of op.parameters.filter((p) => p.in === 'query')) {
    // A query value is always text: only values that stay wrong as text count (no "a number" for a string).
    const isString = concrete(param.schema).type === 'string';
    const bad = badValuesFor(param.schema).filter((b) => (typeof b.value === 'string' || typeof b.value === 'number') && !(isString && typeof b.value === 'number'));
    if (param.name === 'cursor') bad.push({ label: 'a forged cursor', value: 'eyJmb3JnZWQiOnRydWV9.AAAAAAAAAAAAAAAAAAAAAA' });
    const others = Object.entries(requiredQuery).filter(([name]) => name !== param.name);
    const rawQuery = [...others.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`), `${param.name}=${MALFORMED_ENCODING}`].join('&');
    groups.push([
      { ...base, label: `query.${param.name}: malformed percent-encoding`, rawQuery, expectPath: ['query', param.name] },
      ...bad.map((b) => ({ ...base, label: `query.${param.name}: ${b.label}`, query: { ...requiredQuery, [param.name]: String(b.value) }, expectPath: ['query', param.name] })),
    ]);
  }

  if (op.body) {
    const schema = concrete(op.body.schema);
    base.orBody = false;
    const envelope: GenRequest[] = [
      { ...base, label: 'body: an array', body: [validBody], expectPath: ['body'] },
      { ...base, label: 'body: a JSON string', raw: { contentType: 'application/json', data: '"just a string"' }, expectPath: ['body'] },
      { ...base, label: 'body: malformed JSON', raw: { contentType: 'application/json', data: '{"name": "x",' }, expectPath: ['body'] },
      { ...base, label: 'body: invalid UTF-8', raw: { contentType: 'application/json', data: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0xff, 0xfe, 0x22, 0x7d]) } },
      { ...base, label: 'body: text/plain', raw: { contentType: 'text/plain', data: JSON.stringify(validBody) } },
      { ...base, label: 'body: 50k-deep nesting', raw: { contentType: 'application/json', data: '['.repeat(50_000) + ']'.repeat(50_000) } },
      { ...base, label: 'body: over the size limit', raw: { contentType: 'application/json', data: JSON.stringify({ ...validBody, padding: 'x'.repeat(bodyLimitBytes + 10) }) } },
    ];
    if (op.body.required) envelope.push({ ...base, body: undefined, label: 'body: missing', expectPath: ['body'] });
    if (schema.additionalProperties === false) {
      envelope.push({ ...base, label: 'body: an extra field', body: { ...validBody, isAdmin: true }, expectPath: ['body', 'isAdmin'] });
      envelope.push({ ...base, label: 'body: deep nesting in an extra field', body: { ...validBody, nested: deepNesting(500) }, expectPath: ['body', 'nested'] });
    }
    groups.push(envelope);
    // A body of one of several shapes (oneOf) without the property that picks its shape is a body
    // of no shape: the 400 names the body (and says which shapes there are).
    const shapes = op.body.schema.oneOf ?? [];
    const picksShape = (name: string) => shapes.length > 1 && !shapes.every((b) => Object.hasOwn(concrete(b).properties ?? {}, name));
    const missing = (schema.required ?? []).map((name) => {
      const { [name]: _drop, ...rest } = validBody ?? {};
      return { ...base, label: `body.${name}: missing`, body: rest, expectPath: ['body', name], orBody: picksShape(name) };
    });
    groups.push(missing);
    for (const [name, propSchema] of Object.entries(schema.properties ?? {})) {
      groups.push(badValuesFor(propSchema as Schema).map((b) => ({ ...base, label: `body.${name}: ${b.label}`, body: { ...validBody, [name]: b.value }, expectPath: ['body', name] })));
    }
    groups.push(randomBadBodies(op, validBody ?? {}, 6).map((r) => ({ ...r, url })));
  }

  // Round-robin over the groups so every kind of mistake is represented within the budget.
  const out: GenRequest[] = [];
  for (let i = 0; out.length < BAD_REQUESTS_PER_OPERATION; i++) {
    const round = groups.map((g) => g[i]).filter((r): r is GenRequest => r !== undefined);
    if (round.length === 0) break;
    out.push(...round.slice(0, BAD_REQUESTS_PER_OPERATION - out.length));
  }
  return out;
}

/** Valid random requests for the operation (bodies and optional query values drawn from the schema). */
export function validRequests(op: SpecOperation, world: OrgWorld, count: number): GenRequest[] {
  const idFor = idsOf(world);
  const queryParams = op.parameters.filter((p) => p.in === 'query' && p.name !== 'cursor');
  const queryArb = fc.record(Object.fromEntries(queryParams.map((p) => [p.name, validArbitrary(p.schema, idFor)])), {
    requiredKeys: queryParams.filter((p) => p.required).map((p) => p.name),
  });
  const bodyArb = op.body ? validArbitrary(op.body.schema, idFor) : fc.constant(undefined);
  const samples = fc.sample(fc.tuple(queryArb, bodyArb), { seed: SEED, numRuns: count });
  return samples.map(([query, body], i) => ({
    label: `valid #${i + 1}`,
    method: op.method,
    url: fillPath(op.path, pathValues(op, world)),
    query: Object.fromEntries(Object.entries(query as Record<string, unknown>).map(([k, v]) => [k, String(v)])),
    body,
  }));
}

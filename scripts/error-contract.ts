/**
 * The error codes each operation can answer (the code's side: ./error-analysis.ts plus what the
 * router answers before a handler runs) and the codes its responses list (the contract's side),
 * in one shape so the two can be compared (test/contract/error-codes.test.ts) and the contract
 * rewritten from the code (`npm run spec:errors`).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { analyseErrors } from './error-analysis';
import { gateReasons } from '../src/access/session-gates';
import { accessAnswers } from '../src/server/access';

const ROOT = path.resolve(__dirname, '..');

/**
 * Statuses answered through each operation's `default` response (the process's, not the
 * operation's): the body limit, the media type, a failure, the database down. A handler that
 * answers one of them itself (a template's content over its own limit is 413, readiness is 503)
 * makes it that operation's: declared with its codes like any other.
 */
export const DEFAULT_STATUSES = new Set([413, 415, 500, 501, 503]);

export type CodesByStatus = Map<number, Set<string>>;

type Json = Record<string, unknown>;
type Doc = { paths: Record<string, Record<string, Json>>; security?: Json[] };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export interface ContractOperation {
  operationId: string;
  method: string;
  path: string;
  op: Json;
  schemes: Set<string>;
}

export function contractOperations(doc: Doc): ContractOperation[] {
  const out: ContractOperation[] = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const security = (op.security ?? doc.security ?? []) as Json[];
      out.push({ operationId: String(op.operationId), method, path: p, op, schemes: new Set(security.flatMap((s) => Object.keys(s))) });
    }
  }
  return out;
}

/** SCIM routes answer RFC 7644 error bodies (status and scimType), not codes. */
export function speaksCodes(op: ContractOperation): boolean {
  return !op.schemes.has('scimBearer');
}

function add(map: CodesByStatus, status: number, code: string, own = false): void {
  if (DEFAULT_STATUSES.has(status) && !own) return;
  if (!map.has(status)) map.set(status, new Set());
  map.get(status)!.add(code);
}

/** What the code can answer, per operation: the handler's reach, and the router's own answers. */
export function codeSide(doc: Doc): { expected: Map<string, CodesByStatus>; unresolved: string[] } {
  const { operations, unresolved } = analyseErrors();
  const expected = new Map<string, CodesByStatus>();
  for (const op of contractOperations(doc)) {
    if (!speaksCodes(op)) continue;
    const map: CodesByStatus = new Map();
    for (const [status, codes] of operations.get(op.operationId) ?? []) for (const code of codes) add(map, status, code, true);
    // Validation (and the NUL and percent-encoding checks) of parameters and bodies.
    const params = [...((doc.paths[op.path] as Json).parameters as unknown[] ?? []), ...((op.op.parameters as unknown[]) ?? [])];
    if (params.length > 0 || op.op.requestBody) add(map, 400, 'invalid_request');
    if (op.schemes.size > 0) add(map, 401, 'unauthorized');
    // src/server/access.ts: the operation's declared access, checked by the router.
    for (const [status, code] of accessAnswers(op.op)) add(map, status, code);
    // src/access/session-gates.ts: what a session lacking a verified address, a second factor or SSO is refused.
    if (op.schemes.has('bearerAuth')) for (const reason of gateReasons(op)) add(map, 403, reason);
    expected.set(op.operationId, map);
  }
  return { expected, unresolved };
}

/** Follows local `$ref`s (`#/…`, JSON-pointer escapes) to the node they name; the node itself when it has none. */
export function deref(doc: unknown, value: unknown): Json {
  let node = value as Json;
  for (let i = 0; i < 20 && node && typeof node.$ref === 'string'; i++) {
    node = (node.$ref as string)
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((n, key) => (n as Json)[key], doc) as Json;
  }
  return node;
}

/** The codes a response schema allows: its `error` enum (or `reason`'s, for 403), through oneOf. */
export function codesOfSchema(doc: unknown, schemaRef: unknown, status: number): string[] | null {
  const schema = deref(doc, schemaRef);
  if (!schema) return null;
  if (Array.isArray(schema.oneOf)) {
    const all: string[] = [];
    for (const branch of schema.oneOf) {
      const codes = codesOfSchema(doc, branch, status);
      if (!codes) return null;
      all.push(...codes);
    }
    return all;
  }
  const props = (schema.properties ?? {}) as Record<string, Json>;
  const field = deref(doc, status === 403 ? props.reason : props.error);
  if (!field) return null;
  if (Array.isArray(field.enum)) return field.enum.map(String);
  if (typeof field.const === 'string') return [field.const];
  return null;
}

/** What the contract lists, per operation and status (null: a status whose schema lists no codes). */
export function contractSide(doc: Doc): Map<string, Map<number, string[] | null>> {
  const listed = new Map<string, Map<number, string[] | null>>();
  for (const op of contractOperations(doc)) {
    if (!speaksCodes(op)) continue;
    const map = new Map<number, string[] | null>();
    for (const [status, response] of Object.entries((op.op.responses ?? {}) as Json)) {
      // A default status the operation declares on its own is its answer, checked like the others.
      if (!/^[45]\d\d$/.test(status)) continue;
      const content = (deref(doc, response).content ?? {}) as Record<string, Json>;
      const schema = content['application/json']?.schema;
      map.set(Number(status), schema ? codesOfSchema(doc, schema, Number(status)) : null);
    }
    listed.set(op.operationId, map);
  }
  return listed;
}

export function loadBundle(): Doc {
  return JSON.parse(readFileSync(path.join(ROOT, 'generated', 'openapi.json'), 'utf8')) as Doc;
}

/** Every difference between the two sides, in words that say what to change. */
export function differences(expected: Map<string, CodesByStatus>, listed: Map<string, Map<number, string[] | null>>): string[] {
  const problems: string[] = [];
  for (const [operationId, want] of expected) {
    const have = listed.get(operationId) ?? new Map<number, string[] | null>();
    for (const [status, codes] of want) {
      const declared = have.get(status);
      if (declared === undefined) problems.push(`${operationId}: can answer ${status} (${[...codes].sort().join(', ')}) but declares no ${status} response`);
      else if (declared === null) problems.push(`${operationId}: its ${status} response lists no codes (want ${[...codes].sort().join(', ')})`);
      else {
        const missing = [...codes].filter((c) => !declared.includes(c));
        if (missing.length > 0) problems.push(`${operationId}: can answer ${status} ${missing.join(', ')}, which its ${status} response does not list`);
      }
    }
    for (const [status, declared] of have) {
      const codes = want.get(status);
      const extra = (declared ?? []).filter((c) => !codes?.has(c));
      if (!codes) problems.push(`${operationId}: declares ${status}, which it cannot answer`);
      else if (extra.length > 0) problems.push(`${operationId}: its ${status} response lists ${extra.join(', ')}, which it cannot answer`);
    }
  }
  return problems;
}

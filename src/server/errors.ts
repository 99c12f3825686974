import type { Logger } from 'pino';
import type Ajv from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { AppError, InternalError, Invalid, Unavailable, type ErrorDetail } from '../lib/errors';
import { isBadValue, isUnavailable } from '../db/errors';
import type { HttpResult } from '../contract';
import { ID_PREFIXES } from '../lib/ids';
import { createAjv, rootOfOneOf } from './validator';

/**
 * The one place errors become responses. AppErrors carry their own status and body; database
 * outages become 503; everything else is a 500 without internals, logged with its stack.
 */
export function errorToResult(err: unknown, logger: Logger): HttpResult {
  if (err instanceof AppError) return resultOf(err);
  if (isUnavailable(err)) {
    logger.warn({ err: describe(err) }, 'database unavailable');
    return resultOf(new Unavailable());
  }
  if (isBadValue(err)) {
    // The validator should have refused this value; answer 400 and log so the spec gets a limit.
    logger.warn({ err: describe(err) }, 'database refused a value the validator let through');
    return resultOf(Invalid.at(['body'], 'A value is out of range or malformed.'));
  }
  logger.error({ err }, 'unhandled error');
  return resultOf(new InternalError());
}

/** An error class as the answer it gives. */
export function resultOf(err: AppError): HttpResult {
  const headers = err.headers();
  return Object.keys(headers).length > 0 ? { status: err.status, body: err.body(), headers } : { status: err.status, body: err.body() };
}

function describe(err: unknown): { message: string; code?: string } {
  return { message: err instanceof Error ? err.message : String(err), code: (err as { code?: string })?.code };
}

const LOCATION: Record<string, string> = { requestBody: 'body', path: 'path', query: 'query', headers: 'header' };

/**
 * AJV errors from openapi-backend (`instancePath` like `/requestBody/name`) → the spec's details:
 * `{message, path: ['body', 'name']}`; a missing or extra property names that property. Each
 * message says what is allowed (AJV's own say "must NOT be valid" or "must match pattern").
 */
export function validationDetails(errors: ErrorObject[] | null | undefined): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const error of resolveOneOf(errors ?? [])) {
    const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    const params = error.params as { missingProperty?: string; additionalProperty?: string };
    let message = messageOf(error);
    if (params.missingProperty) {
      segments.push(params.missingProperty);
      message = 'is required';
    } else if (params.additionalProperty) {
      segments.push(params.additionalProperty);
      message = 'is not allowed';
    }
    if (segments.length === 0) segments.push('body');
    segments[0] = LOCATION[segments[0]!] ?? segments[0]!;
    const key = `${segments.join('.')}|${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ message, path: segments });
  }
  return details.length > 0 ? details : [{ message: 'is invalid', path: ['body'] }];
}

type Schema = Record<string, unknown>;

const FORMATS: Record<string, string> = {
  email: 'must be an e-mail address',
  uri: 'must be an absolute URI (e.g. https://example.com/path)',
  'date-time': 'must be a date and time (RFC 3339, e.g. 2026-01-31T09:30:00Z)',
  date: 'must be a date (YYYY-MM-DD)',
  uuid: 'must be a UUID',
};

/** One error's message, saying what the schema allows. */
function messageOf(error: ErrorObject): string {
  const params = error.params as { allowedValues?: unknown[]; allowedValue?: unknown; limit?: number; format?: string; type?: string };
  const schema = (error.parentSchema ?? {}) as Schema;
  const ownMessage = (key: string) => (typeof schema[key] === 'string' ? (schema[key] as string) : undefined);
  switch (error.keyword) {
    case 'enum':
      return params.allowedValues ? `must be one of: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}` : 'is not an allowed value';
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'not':
      return ownMessage('x-not-message') ?? 'is not an allowed value';
    case 'oneOf':
      return error.message ?? 'is invalid';
  }
  // A TypeID: one message for its prefix, length and alphabet, naming the kind it must be.
  const id = typeIdOf(schema);
  if (id && ['pattern', 'format', 'minLength', 'maxLength', 'type'].includes(error.keyword)) return id;
  switch (error.keyword) {
    case 'pattern':
      return ownMessage('x-pattern-message') ?? `must match the pattern ${String(schema['pattern'])}`;
    case 'format':
      return FORMATS[params.format ?? ''] ?? `must be a valid ${params.format ?? 'value'}`;
    case 'minLength':
      return params.limit === 1 ? 'must not be empty' : `must be at least ${params.limit} characters long`;
    case 'maxLength':
      return `must be at most ${params.limit} characters long`;
    case 'minItems':
      return `must have at least ${params.limit} item${params.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must have at most ${params.limit} items`;
    case 'minProperties':
      return `must set at least ${params.limit} field${params.limit === 1 ? '' : 's'}`;
    case 'type':
      return `must be ${article(String(params.type).replace(/,/g, ' or '))}`;
    default:
      return error.message ?? 'is invalid';
  }
}

const ID_KINDS = new Map<string, string>(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [
    prefix,
    kind
      .replace(/([A-Z])/g, ' $1')
      .toLowerCase()
      .replace(/\b(mcp|api|llm|sso|scim|mfa)\b/g, (w) => w.toUpperCase()),
  ]),
);

/** "must be a team id (tem_ followed by 26 characters)" for a TypeID schema, else undefined. */
function typeIdOf(schema: Schema): string | undefined {
  if (schema['format'] !== 'typeid') return undefined;
  const pattern = typeof schema['pattern'] === 'string' ? schema['pattern'] : '';
  // `^tem_.*`, or `^(dus|om)_.*` for a value that may be either kind.
  const prefixes = /^\^\(?([a-z|]+)\)?_/.exec(pattern)?.[1]?.split('|') ?? [];
  if (prefixes.length === 0) return 'must be an id (a prefix, "_" and 26 characters)';
  const kinds = prefixes.map((p) => `${ID_KINDS.get(p) ?? 'other'} id`);
  return `must be ${article(kinds.join(' or '))} (${prefixes.map((p) => `${p}_`).join(' or ')} followed by 26 characters)`;
}

function article(noun: string): string {
  if (noun.startsWith('null')) return noun;
  return `${/^([aeio]|MCP|LLM|SSO|MFA)/.test(noun) ? 'an' : 'a'} ${noun}`;
}

/**
 * AJV reports a failed `oneOf` as every branch's errors plus "must match exactly one schema in
 * oneOf". The branch the request meant (meantBranch) has the real problem: its errors are the
 * answer. When no branch, or several, could be meant, one error at the oneOf's place says which
 * shapes are allowed (the schema's `x-oneof-message`, or the branches).
 *
 * The branches' errors come right before the oneOf's own, but AJV shares the code of a subschema
 * met twice (GrantRole in each grant shape), so their `schemaPath` cannot tell the branches
 * apart: each branch is checked again on its own (validators compiled once per branch schema),
 * which also resolves a oneOf nested in it.
 */
function resolveOneOf(errors: ErrorObject[]): ErrorObject[] {
  const out: ErrorObject[] = [];
  for (const error of errors) {
    if (error.keyword !== 'oneOf') {
      out.push(error);
      continue;
    }
    // Drop the branches' errors: those just before it, at or under the oneOf's place.
    const at = error.instancePath;
    while (out.length > 0 && isUnder(out[out.length - 1]!.instancePath, at)) out.pop();
    out.push(...explainOneOf(error));
  }
  return out;
}

function isUnder(path: string, at: string): boolean {
  return path === at || path.startsWith(`${at}/`);
}

function explainOneOf(error: ErrorObject): ErrorObject[] {
  const at = error.instancePath;
  const root = rootOfOneOf(error.schema);
  const count = Array.isArray(error.schema) ? error.schema.length : 0;
  // The branches as JSON pointers into the request schema (AJV's path of shared code still
  // points at an equal schema: the first place it appears).
  const pointers = Array.from({ length: count }, (_, i) => `${error.schemaPath.slice(1)}/${i}`);
  const branches = root ? pointers.map((p) => resolvePointer(root, p)) : [];
  const summary = [{ ...error, message: oneOfMessage(error.parentSchema as Schema | undefined, branches) }];
  const checks = root ? pointers.map((pointer) => branchValidator(root, pointer)) : [];
  if (checks.length === 0 || checks.some((check) => check === undefined)) return summary;
  const results = checks.map((check) => {
    // The branch validator has no coercion or defaults: it reads the data without changing it.
    check!(error.data);
    return resolveOneOf(check!.errors ?? []).map((e) => ({ ...e, instancePath: `${at}${e.instancePath}` }));
  });
  if (results.some((errs) => errs.length === 0)) return summary;
  return meantBranch(results, at, branches) ?? summary;
}

/** The schema at a JSON pointer of a request schema, following the `$ref`s decycling left. */
function resolvePointer(root: object, pointer: string, depth = 0): Schema {
  let node: unknown = root;
  for (const raw of pointer.split('/').slice(1)) {
    node = followRef(root, node, depth);
    node = (node as Record<string, unknown> | undefined)?.[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return (followRef(root, node, depth) ?? {}) as Schema;
}

function followRef(root: object, node: unknown, depth: number): unknown {
  const ref = (node as { $ref?: unknown } | undefined)?.$ref;
  return typeof ref === 'string' && ref.startsWith('#') && depth < 20 ? resolvePointer(root, ref.slice(1), depth + 1) : node;
}

let branchAjv: Ajv | undefined;
const rootKeys = new WeakMap<object, string>();
let rootCount = 0;
const branchValidators = new Map<string, ValidateFunction | undefined>();

/**
 * A validator of one branch, in its own request schema (so its `$ref`s resolve); compiled once.
 * Undefined when it cannot be had: the answer is then the summary, never a 500 for a bad request.
 */
function branchValidator(root: object, pointer: string): ValidateFunction | undefined {
  branchAjv ??= createAjv({});
  let key = rootKeys.get(root);
  if (!key) {
    key = `request-schema-${++rootCount}`;
    branchAjv.addSchema(root as Schema, key);
    rootKeys.set(root, key);
  }
  const id = `${key}#${pointer}`;
  if (!branchValidators.has(id)) {
    let check: ValidateFunction | undefined;
    try {
      check = branchAjv.getSchema(id);
    } catch {
      check = undefined;
    }
    branchValidators.set(id, check);
  }
  return branchValidators.get(id);
}

/**
 * Which branch the request meant. A branch is ruled out by a wrong type at the oneOf's place, an
 * extra property another branch declares (the request mixes shapes), or a value that picks
 * another shape (`orgWide: false` where only `true` is this shape; `method: "totp"` where another
 * branch takes it). Of the branches left, one is the answer; if several are, the one not missing
 * a property only it has (`{role}` alone misses every branch's target: no answer).
 */
function meantBranch(results: ErrorObject[][], at: string, branches: Schema[]): ErrorObject[] | undefined {
  const propsOf = (b: Schema | undefined) => Object.keys((b?.['properties'] as Schema | undefined) ?? {});
  const declared = branches.map((b) => new Set(propsOf(b)));
  const topProperty = (e: ErrorObject) => (e.instancePath.startsWith(`${at}/`) && !e.instancePath.slice(at.length + 1).includes('/') ? e.instancePath.slice(at.length + 1) : undefined);
  const okIn = (j: number, property: string) => declared[j]!.has(property) && !results[j]!.some((e) => topProperty(e) === property);
  const verdicts = results.map((errors, i) => {
    const others = branches.map((_, j) => j).filter((j) => j !== i);
    const onlyHere = (p: string) => !others.some((j) => declared[j]!.has(p));
    let ruledOut = false;
    let missesOwn = false;
    for (const e of errors) {
      const params = e.params as { missingProperty?: string; additionalProperty?: string };
      const property = topProperty(e);
      if (e.instancePath === at && (e.keyword === 'type' || e.keyword === 'oneOf')) ruledOut = true;
      else if (e.instancePath === at && e.keyword === 'additionalProperties' && others.some((j) => declared[j]!.has(params.additionalProperty ?? ''))) ruledOut = true;
      else if (e.instancePath === at && e.keyword === 'required' && onlyHere(params.missingProperty ?? '')) missesOwn = true;
      else if (property && (e.keyword === 'const' || e.keyword === 'enum') && (onlyHere(property) || others.some((j) => okIn(j, property)))) ruledOut = true;
    }
    return { errors, ruledOut, missesOwn };
  });
  const left = verdicts.filter((v) => !v.ruledOut);
  if (left.length === 1) return left[0]!.errors;
  const complete = left.filter((v) => !v.missesOwn);
  return complete.length === 1 ? complete[0]!.errors : undefined;
}

function oneOfMessage(schema: Schema | undefined, branches: Schema[]): string {
  if (typeof schema?.['x-oneof-message'] === 'string') return schema['x-oneof-message'];
  const shapes = branches.map((b) => {
    const fields = Array.isArray(b['required']) ? `{${(b['required'] as string[]).join(', ')}}` : undefined;
    if (typeof b['title'] === 'string') return fields ? `${b['title']} ${fields}` : b['title'];
    if (fields) return fields;
    if (b['type'] === 'null') return 'null';
    if (Array.isArray(b['enum'])) return b['enum'].map((v) => JSON.stringify(v)).join(', ');
    if (typeof b['type'] === 'string') return article(b['type']);
    return 'another shape';
  });
  const simple = branches.every((b) => typeof b['title'] !== 'string' && !Array.isArray(b['required']));
  return simple ? `must be ${shapes.join(' or ')}` : `must be exactly one of: ${shapes.join('; ')}`;
}

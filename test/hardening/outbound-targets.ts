import type { Schema, SpecOperation } from '../support/spec';
import { concrete, validValue } from '../support/schema-values';
import { idsOf, SEED, type GenRequest } from './generate';
import { pathValues, type OrgWorld } from './world';
import { fillPath } from '../support/spec';

/**
 * Tenant-supplied URLs in request bodies, found from the contract: a string schema marked
 * `x-outbound-url: true` is called by the service (egress policy, src/outbound); one marked
 * `false` never is. A URL-looking schema (format uri or an http(s) pattern) without the mark makes
 * `unmarkedUrlFields` name it, so a new URL field cannot skip these tests silently.
 */
export const DISALLOWED_TARGETS = [
  'http://127.0.0.1:9/',
  'http://169.254.169.254/latest/meta-data/',
  'http://10.0.0.1/',
  'http://100.64.0.1/',
  'http://[::1]/',
  'http://[fd00::1]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::127.0.0.1]/',
  'http://localhost/',
];

type Marked = { schema: Schema; path: string[] };

function mark(schema: Schema): unknown {
  return (schema as Record<string, unknown>)['x-outbound-url'];
}

function looksLikeUrl(schema: Schema): boolean {
  const s = schema as { format?: string; pattern?: string };
  return s.format === 'uri' || /https\?:/.test(s.pattern ?? '');
}

/** Every string field of the body schema (through oneOf/anyOf/allOf and nested objects), with its path. */
function stringFields(schema: Schema, path: string[], out: Marked[], depth = 0): Marked[] {
  if (depth > 6) return out;
  const branches = [...(schema.oneOf ?? []), ...(schema.anyOf ?? []), ...(schema.allOf ?? [])] as Schema[];
  for (const branch of branches) stringFields(branch, path, out, depth + 1);
  if (mark(schema) !== undefined || looksLikeUrl(schema)) out.push({ schema, path });
  for (const [name, prop] of Object.entries(schema.properties ?? {})) stringFields(prop as Schema, [...path, name], out, depth + 1);
  return out;
}

export function outboundFields(op: SpecOperation): string[][] {
  if (!op.body) return [];
  const seen = new Set<string>();
  return stringFields(op.body.schema, [], [])
    .filter((f) => mark(f.schema) === true)
    .map((f) => f.path)
    .filter((p) => !seen.has(p.join('.')) && seen.add(p.join('.')));
}

export function unmarkedUrlFields(op: SpecOperation): string[] {
  if (!op.body) return [];
  return stringFields(op.body.schema, [], [])
    .filter((f) => mark(f.schema) === undefined)
    .map((f) => `${op.operationId} body.${f.path.join('.')}`);
}

/** A valid body with `target` at `path` (parents filled with valid values when the base lacks them). */
function withTarget(op: SpecOperation, base: Record<string, unknown>, path: string[], target: string): Record<string, unknown> {
  const body = structuredClone(base);
  // Only the required fields and the one under test: an optional field's generated value may be
  // refused on its own (a backfill `from` in the future), and the answer must name the target.
  const required = new Set(concrete(op.body!.schema).required ?? []);
  for (const key of Object.keys(body)) if (!required.has(key) && key !== path[0]) delete body[key];
  let node: Record<string, unknown> = body;
  let schema = concrete(op.body!.schema);
  for (const key of path.slice(0, -1)) {
    const child = concrete((schema.properties ?? {})[key] as Schema);
    if (node[key] === null || typeof node[key] !== 'object') node[key] = validValue(child, () => undefined, SEED);
    node = node[key] as Record<string, unknown>;
    schema = child;
  }
  node[path[path.length - 1]!] = target;
  return body;
}

/**
 * Bodies whose URL field is valid only with fields a schema cannot tie to it (an audit stream's
 * config depends on its `type`), by operation and field: the generated body is refused for its
 * mismatch before its target is looked at. The world's stream is a Splunk HEC one.
 */
const S3 = { region: 'eu-west-1', bucket: 'audit', accessKeyId: 'AKIAHARDENING', secretAccessKey: 'hardening-secret-access-key' };
const SHAPED_BODIES: Record<string, Record<string, Record<string, unknown>>> = {
  createAuditStream: {
    'config.url': { type: 'https', config: { url: 'https://siem.example.test/' } },
    'config.endpoint': { type: 's3', config: { ...S3, endpoint: 'https://s3.example.test/' } },
  },
  updateAuditStream: {
    'config.url': { config: { url: 'https://splunk.example.test/services/collector/event', token: 'hec-hardening-token' } },
  },
};

export function outboundTargetRequests(op: SpecOperation, world: OrgWorld): GenRequest[] {
  const base = validValue(op.body!.schema, idsOf(world), SEED) as Record<string, unknown>;
  const url = fillPath(op.path, pathValues(op, world));
  const shaped = SHAPED_BODIES[op.operationId];
  return outboundFields(op)
    .filter((field) => !shaped || shaped[field.join('.')])
    .flatMap((field) =>
      DISALLOWED_TARGETS.map((target) => ({
        label: `body.${field.join('.')} = ${target}`,
        method: op.method,
        url,
        body: withTarget(op, shaped?.[field.join('.')] ?? base, field, target),
        expectPath: ['body', ...field],
      })),
    );
}

// npm run spec:errors: lists, per operation and status, the error codes the code can answer, and
// writes them into the contract: each error response of an operation becomes a reference to the
// answer for its set of codes in openapi/components/error-answers.yaml (written here too, with
// each code's meaning from src/lib/error-codes.ts). `--check` only prints the differences.
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Document, parseDocument, isMap, isPair, isScalar, isSeq, type Pair, type YAMLMap } from 'yaml';
import { PERMISSION_CATALOGUE } from '../src/access/permissions';
import { ERROR_CODES, isErrorCode } from '../src/lib/error-codes';
import { codeSide, contractSide, differences, loadBundle, DEFAULT_STATUSES, type CodesByStatus } from './error-contract';

const ROOT = path.resolve(__dirname, '..');
const GATE_REASONS = new Set(['email_not_verified', 'mfa_enrollment_required', 'organization_deleted', 'sso_required']);
const ANSWERS = 'openapi/components/error-answers.yaml';

/** Codes whose body carries more than `error` and `message`: their own schema in errors.yaml. */
const SHAPED: Record<string, string> = {
  invalid_request: 'errors.yaml#/InvalidRequestError',
  unauthorized: 'errors.yaml#/UnauthorizedError',
  plan_limit_reached: 'errors.yaml#/PlanLimitReachedError',
  enterprise_plan_required: 'errors.yaml#/EnterprisePlanRequiredError',
  version_mismatch: 'templates.yaml#/VersionMismatchError',
};

const TITLES: Record<number, string> = {
  400: 'The request is refused.',
  401: 'Not authenticated.',
  402: "Not in the organization's plan.",
  403: 'Not permitted.',
  404: 'Not found in the caller\'s organization.',
  409: "Conflicts with the resource's current state.",
  410: 'Gone.',
  412: 'The resource changed since it was read.',
  413: 'Too large.',
  429: 'Too many requests.',
  502: 'An upstream service failed.',
  503: 'Not available now.',
};

/**
 * Values for the expressions of template-literal messages, so an example reads as the service's
 * answer would (`${domain} is verified by another organization.` → `example.com is …`). An
 * expression not listed here is shown as `…`.
 */
const EXPRESSION_SAMPLES: Record<string, string> = {
  'resource.label': 'marketplace',
  domain: 'example.com',
  'body.key': 'support',
  why: 'no TXT record _cp-challenge.example.com holds the token',
  current: '4',
  plan: 'free',
  max: '5',
  'LIMIT_WORDS[limit]': 'members',
  'FEATURE_WORDS[feature]': 'Single sign-on',
  seconds: '30',
  'missing.slice(0, 5).join(\', \')': 'roles.manage',
  'holders.members': '2',
  'holders.invitations': '1',
  'holders.connections': '0',
  'err.message': 'could not be reached (connect ETIMEDOUT)',
  url: 'https://mcp.example.com/.well-known/oauth-authorization-server',
  'res.status': '404',
  what: 'Exchanging the authorization code',
  'members[0]': 'om_01m5zvjhhrebha7y5r3map2at2',
  'teams[0]': 'tem_01m5tngtfre7vvqsmghcgqpjqj',
  'reply.status': '500',
  'describeFailure(reply)': 'the suite answered 503',
  'failure(reply)': 'The LLM provider answered HTTP 401: invalid API key.',
  bytes: '262145',
  MAX_CONTENT_BYTES: '262144',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [full] : [];
  });
}

function unquote(quote: string, body: string): { text: string; literal: boolean } {
  if (quote !== '`') return { text: body.replace(/\\(.)/g, '$1'), literal: true };
  return { text: body.replace(/\$\{([^}]*)\}/g, (_m, expr: string) => EXPRESSION_SAMPLES[expr.trim()] ?? '…').replace(/\\(.)/g, '$1'), literal: false };
}

/**
 * The message the service answers with, per code, read from src/: the first plain string thrown
 * with the code (`new NotFound('team_not_found', 'The team could not be found.')`, or through a
 * one-line wrapper such as `suiteError('…')`), else the first template with its expressions filled
 * in from EXPRESSION_SAMPLES. Permission and resource-role refusals are built from their key.
 */
function serviceMessages(): Map<string, string> {
  const literal = new Map<string, string>();
  const template = new Map<string, string>();
  const note = (code: string, quote: string, body: string) => {
    if (!isErrorCode(code)) return;
    const { text, literal: isLiteral } = unquote(quote, body);
    const into = isLiteral ? literal : template;
    if (!into.has(code)) into.set(code, text);
  };
  const texts = sourceFiles(path.join(ROOT, 'src')).map((file) => readFileSync(file, 'utf8'));
  // A quoted string or template (no `${` nesting of quotes); `q` is its quote.
  const STRING = String.raw`(?<q>['"\`])((?:\\.|(?!\k<q>)[^\\])*)\k<q>`;
  for (const text of texts) {
    for (const m of text.matchAll(new RegExp(String.raw`'([a-z][a-z0-9_]+)',\s*` + STRING, 'g'))) note(m[1]!, m[2]!, m[3]!);
    for (const m of text.matchAll(new RegExp(String.raw`new RateLimited\(\w+,\s*` + STRING, 'g'))) note('rate_limited', m[1]!, m[2]!);
    for (const w of text.matchAll(/const (\w+) = \(message: string\) => new \w+\('([a-z_]+)', message\)/g)) {
      for (const m of text.matchAll(new RegExp(String.raw`\b${w[1]}\(` + STRING, 'g'))) note(w[2]!, m[1]!, m[2]!);
    }
  }
  const messages = new Map([...template, ...literal]);
  const roles = readFileSync(path.join(ROOT, 'src/access/roles.ts'), 'utf8');
  permissionMessage = /PERMISSION_CATALOGUE\[permission\]\.reason, `([^`]*)`/.exec(roles)?.[1];
  for (const [key, entry] of Object.entries(PERMISSION_CATALOGUE)) {
    if (permissionMessage && !messages.has(entry.reason)) messages.set(entry.reason, permissionMessage.replace('${permission}', key));
  }
  const resourceRoles = readFileSync(path.join(ROOT, 'src/access/resource-roles.ts'), 'utf8');
  const roleMessage = /_required`, `([^`]*)`/.exec(resourceRoles)?.[1];
  for (const code of Object.keys(ERROR_CODES)) {
    const m = /^(.+)_(viewer|editor|manager)_required$/.exec(code);
    if (m && roleMessage && !messages.has(code)) {
      const label = m[1] === 'llm_provider' ? 'LLM provider' : m[1]!.replace(/_/g, ' ');
      messages.set(code, roleMessage.replace('${needed}', m[2]!).replace('${label}', label));
    }
  }
  return messages;
}

let messagesCache: Map<string, string> | undefined;
/** The message of a permission's 403 (src/access/roles.ts), with `${permission}` for its key. */
let permissionMessage: string | undefined;

/**
 * How an operation's 403 is answered: in the handler's own body (`reason` and `message` only) or
 * the standard one, and the permission the operation declares for each `reason` it can refuse
 * with (`x-permission` first, then `x-permission-also`): its example names that permission.
 */
interface Refusals {
  reasonOnly: boolean;
  permissions: ReadonlyMap<string, string>;
}

const NO_REFUSALS: Refusals = { reasonOnly: false, permissions: new Map() };

/** The permission the operation declares for each 403 reason, the first key per reason. */
function declaredPermissions(keys: string[]): Map<string, string> {
  const byReason = new Map<string, string>();
  for (const key of keys) {
    const reason = (PERMISSION_CATALOGUE as Record<string, { reason: string }>)[key]?.reason;
    if (reason && !byReason.has(reason)) byReason.set(reason, key);
  }
  return byReason;
}

/** An example body for one code, as the service sends it. */
function exampleBody(status: number, code: string, refusals: Refusals): Record<string, unknown> {
  const { reasonOnly } = refusals;
  messagesCache ??= serviceMessages();
  const permission = status === 403 ? refusals.permissions.get(code) : undefined;
  const message = (permission && permissionMessage?.replace('${permission}', permission)) ?? messagesCache.get(code) ?? (isErrorCode(code) ? ERROR_CODES[code].description : code);
  if (code === 'invalid_request') return { error: code, message: 'The request is invalid.', details: [{ message: 'is required', path: ['body', 'name'] }] };
  if (code === 'unauthorized') return { error: code };
  if (status === 403) return reasonOnly && !GATE_REASONS.has(code) ? { reason: code, message } : { error: 'forbidden', reason: code, message };
  if (code === 'plan_limit_reached') return { error: code, limit: 'members', message };
  if (code === 'enterprise_plan_required') return { error: code, feature: 'sso', message };
  if (code === 'version_mismatch') return { error: code, message, version: 4 };
  return { error: code, message };
}

/**
 * One example per code, the operation's own refusals first: a 403's permission or role before the
 * session gates every route has, a 404 of the resource before `organization_not_found`.
 */
function examplesFor(status: number, codes: string[], refusals: Refusals): Record<string, { summary: string; value: unknown }> {
  const generic = new Set([...GATE_REASONS, 'organization_not_found']);
  const ordered = [...codes.filter((c) => !generic.has(c)), ...codes.filter((c) => generic.has(c))];
  return Object.fromEntries(ordered.map((code) => [code, { summary: code, value: exampleBody(status, code, refusals) }]));
}

/** The permissions an answer's examples name (those of its codes), in the answer's name. */
function namedPermissions(codes: string[], refusals: Refusals): string[] {
  return codes.flatMap((code) => refusals.permissions.get(code) ?? []);
}

function answerName(status: number, codes: string[], refusals: Refusals): string {
  const named = namedPermissions(codes, refusals);
  return `${status}${refusals.reasonOnly ? '-reason-only' : ''}-${codes.join('-')}${named.length > 0 ? `-for-${named.join('-')}` : ''}`;
}

function answer(status: number, codes: string[], refusals: Refusals): Record<string, unknown> {
  const { reasonOnly } = refusals;
  const lines = codes.map((c) => `- \`${c}\`: ${isErrorCode(c) ? ERROR_CODES[c].description : '?'}`);
  const description = `${TITLES[status] ?? 'Refused.'} ${status === 403 ? '`reason`' : '`error`'} is one of:\n\n${lines.join('\n')}`;
  let schema: Record<string, unknown>;
  if (status === 403) {
    const standard = (reasons: string[]) => ({ type: 'object', required: ['error', 'reason', 'message'], properties: { error: { type: 'string', const: 'forbidden' }, reason: { type: 'string', enum: reasons }, message: { type: 'string' } } });
    if (reasonOnly) {
      // The handler's refusals have no `error`; the session gate answers before it, in the standard body.
      const gate: string[] = codes.filter((c) => GATE_REASONS.has(c));
      const own = { type: 'object', required: ['reason', 'message'], additionalProperties: false, properties: { reason: { type: 'string', enum: codes.filter((c) => !gate.includes(c)) }, message: { type: 'string' } } };
      schema = gate.length > 0 ? { oneOf: [own, standard(gate)] } : own;
    } else {
      schema = standard(codes);
    }
  } else {
    const plain = codes.filter((c) => !SHAPED[c]);
    const branches: Record<string, unknown>[] = codes.filter((c) => SHAPED[c]).map((c) => ({ $ref: `./${SHAPED[c]}` }));
    if (plain.length > 0) branches.push({ type: 'object', required: ['error', 'message'], properties: { error: { type: 'string', enum: plain }, message: { type: 'string' } } });
    schema = branches.length === 1 ? branches[0]! : { oneOf: branches };
  }
  const result: Record<string, unknown> = { description, content: { 'application/json': { schema, examples: examplesFor(status, codes, refusals) } } };
  if (status === 429) result.headers = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } };
  return result;
}

interface Edit {
  start: number;
  end: number;
  text: string;
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf('\n', offset - 1) + 1;
}

function lineEnd(text: string, offset: number): number {
  const at = text.indexOf('\n', offset);
  return at === -1 ? text.length : at + 1;
}

function main(): void {
  const check = process.argv.includes('--check');
  const doc = loadBundle();
  const { expected, unresolved } = codeSide(doc);
  const problems = differences(expected, contractSide(doc));
  for (const u of unresolved) console.log(`unresolved: ${u}`);
  for (const p of problems) console.log(p);
  if (check) {
    process.exit(problems.length > 0 || unresolved.length > 0 ? 1 : 0);
  }

  const answers = new Map<string, Record<string, unknown>>();
  const dir = path.join(ROOT, 'openapi', 'paths');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    const full = path.join(dir, file);
    const text = readFileSync(full, 'utf8');
    const ydoc = parseDocument(text);
    const edits: Edit[] = [];
    for (const pathPair of (ydoc.contents as YAMLMap).items as Pair[]) {
      if (!isMap(pathPair.value)) continue;
      for (const methodPair of pathPair.value.items as Pair[]) {
        if (!isMap(methodPair.value)) continue;
        const operationId = methodPair.value.get('operationId');
        const want: CodesByStatus | undefined = typeof operationId === 'string' ? expected.get(operationId) : undefined;
        if (!want) continue;
        const responses = methodPair.value.get('responses', true);
        if (!isMap(responses)) continue;
        const pairs = (responses.items as Pair[]).filter(isPair);
        const errorPairs = pairs.filter((p) => isScalar(p.key) && /^[45]\d\d$/.test(String(p.key.value)) && (!DEFAULT_STATUSES.has(Number(p.key.value)) || want.has(Number(p.key.value))));
        const reasonOnly = errorPairs.some((p) => /MarketplaceForbiddenError|#\/403-reason-only-/.test(JSON.stringify((p.value as { toJSON?: () => unknown } | null)?.toJSON?.() ?? '')));
        if (errorPairs.length === 0 && want.size === 0) continue;
        const also = methodPair.value.get('x-permission-also', true);
        const declared = [methodPair.value.get('x-permission'), ...(isSeq(also) ? also.items.map((item) => (isScalar(item) ? item.value : undefined)) : [])];
        const permissions = declaredPermissions(declared.filter((key): key is string => typeof key === 'string'));
        const anchorPair = errorPairs[0] ?? pairs.find((p) => isScalar(p.key) && String(p.key.value) === 'default');
        if (!anchorPair || !isScalar(anchorPair.key) || !anchorPair.key.range) throw new Error(`${file}: ${String(operationId)} has no error responses nor default`);
        const keyStart = anchorPair.key.range[0];
        const indent = ' '.repeat(keyStart - lineStart(text, keyStart));
        const block = [...want]
          .sort(([a], [b]) => a - b)
          .map(([status, codes]) => {
            const sorted = [...codes].sort();
            const refusals = status === 403 ? { reasonOnly, permissions } : NO_REFUSALS;
            const name = answerName(status, sorted, refusals);
            answers.set(name, answer(status, sorted, refusals));
            return `${indent}'${status}':\n${indent}  $ref: ../components/error-answers.yaml#/${name}\n`;
          })
          .join('');
        if (errorPairs.length === 0) {
          edits.push({ start: lineStart(text, keyStart), end: lineStart(text, keyStart), text: block });
          continue;
        }
        for (const [i, p] of errorPairs.entries()) {
          const start = lineStart(text, (p.key as { range: [number, number, number] }).range[0]);
          const valueEnd = (p.value as { range?: [number, number, number] } | null)?.range?.[1] ?? start;
          edits.push({ start, end: lineEnd(text, Math.max(start, valueEnd - 1)), text: i === 0 ? block : '' });
        }
      }
    }
    if (edits.length === 0) continue;
    let out = text;
    for (const e of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
    if (out !== text) writeFileSync(full, out);
  }

  const header =
    '# Error answers by the set of codes an operation can answer, referenced from openapi/paths/.\n' +
    '# Written by `npm run spec:errors` from the code (src/lib/error-codes.ts has each meaning);\n' +
    '# do not edit by hand.\n';
  const sorted = [...answers].sort(([a], [b]) => a.localeCompare(b));
  const body = new Document(Object.fromEntries(sorted));
  writeFileSync(path.join(ROOT, ANSWERS), header + body.toString({ lineWidth: 100 }));
  console.log(`${problems.length} difference(s) written; ${answers.size} answers in ${ANSWERS}. Run npm run generate.`);
}

main();

import { createTestApp, type TestApp } from '../support/app';
import { handlers } from '../../src/server/registry';
import { specOperations } from '../support/spec';
import { snapshot, snapshotDiff } from '../support/snapshot';
import { badRequests, ownerCredential, send, BAD_REQUESTS_PER_OPERATION, type GenRequest } from './generate';
import { hostileRequests, POLLUTION_MARKERS } from './hostile';
import { buildWorld, type OrgWorld } from './world';
import type { Response } from 'supertest';

/**
 * Every operation of the contract, fed invalid requests generated from its schema: each gets a
 * 4xx in the contract's error shape (a 400 names the offending location), never a 5xx, and the
 * database is exactly as before (row counts and contents of every table). Hostile requests
 * (./hostile.ts: prototype keys and over-deep JSON wherever the client chooses keys, SCIM
 * attribute paths) are sent too, and must leave `Object.prototype` and `/health` untouched.
 */
const BODY_LIMIT = 256 * 1024;
let t: TestApp;
let world: OrgWorld;
beforeAll(async () => {
  t = await createTestApp({ settings: { bodyLimitBytes: BODY_LIMIT } });
  world = await buildWorld(t, 'A');
}, 240_000);
afterAll(() => t.close());

function startsWith(path: unknown, prefix: string[]): boolean {
  return Array.isArray(path) && prefix.every((p, i) => path[i] === p);
}

/** What is wrong with the answer to a bad request, or null when it is right. */
export function problemWith(req: GenRequest, res: Response, errorFormat: 'default' | 'scim' = 'default'): string | null {
  if (res.status >= 500) return `${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
  if (res.status < 400) return `accepted with ${res.status}`;
  if (errorFormat === 'scim') return scimProblem(req, res);
  const body = res.body as Record<string, unknown>;
  if (typeof body?.error !== 'string' && typeof body?.reason !== 'string') return `${res.status} without an error code: ${res.text.slice(0, 200)}`;
  if (res.status === 400) {
    if (body.error !== 'invalid_request') return `400 with error ${String(body.error)}`;
    const details = body.details as { path: string[] }[] | undefined;
    if (!Array.isArray(details) || details.length === 0) return '400 without details';
    if (!details.every((d) => ['body', 'path', 'query', 'header'].includes(d.path?.[0] ?? ''))) return `400 with a detail outside body/path/query/header: ${JSON.stringify(details)}`;
    const named = details.some((d) => startsWith(d.path, req.expectPath ?? []) || (req.orBody === true && d.path[0] === 'body'));
    if (req.expectPath && !named) {
      return `400 details ${JSON.stringify(details.map((d) => d.path))} do not name ${JSON.stringify(req.expectPath)}`;
    }
  }
  return null;
}

/** /scim/v2 answers SCIM errors: the status as a string, a scimType on 400, the location in `detail`. */
function scimProblem(req: GenRequest, res: Response): string | null {
  const body = res.body as { schemas?: string[]; status?: string; scimType?: string; detail?: string };
  if (!String(res.headers['content-type']).includes('application/scim+json')) return `${res.status} not application/scim+json`;
  if (!body.schemas?.includes('urn:ietf:params:scim:api:messages:2.0:Error') || body.status !== String(res.status)) return `${res.status} without a SCIM error body: ${res.text.slice(0, 200)}`;
  if (res.status === 400) {
    if (!body.scimType) return '400 without a scimType';
    const where = (req.expectPath ?? []).join('.');
    if (where && !(body.detail ?? '').includes(where) && !(req.orBody && (body.detail ?? '').includes('body'))) return `400 detail ${JSON.stringify(body.detail)} does not name ${where}`;
  }
  return null;
}

const operations = specOperations();
/** Each operation's requests, generated once for both tests that read them. */
const generated = new Map<string, { requests: GenRequest[]; hostile: boolean }>();
function requestsFor(op: (typeof operations)[number]): { requests: GenRequest[]; hostile: boolean } {
  if (!generated.has(op.operationId)) {
    const hostile = hostileRequests(op, world);
    generated.set(op.operationId, { requests: [...badRequests(op, world, BODY_LIMIT), ...hostile], hostile: hostile.length > 0 });
  }
  return generated.get(op.operationId)!;
}

it('covers every operation the service serves, and generates bad requests for each that takes input', () => {
  // The contract's operations are exactly those with a handler: none served untested, none tested unserved.
  expect(operations.map((op) => op.operationId).sort()).toEqual(Object.keys(handlers).sort());
  const takesInput = (op: (typeof operations)[number]) => op.body !== null || op.parameters.length > 0;
  const withoutCases = operations.filter((op) => takesInput(op) && requestsFor(op).requests.length === 0).map((op) => op.operationId);
  expect(withoutCases).toEqual([]);
});

it('finds where clients choose keys and name attributes (so the hostile classes reach them)', () => {
  const hostile = (id: string) => hostileRequests(operations.find((op) => op.operationId === id)!, world).map((r) => r.label);
  expect(hostile('createTemplate')).toEqual(expect.arrayContaining(['body.content: a "__proto__" key', 'body.content: nested 100 deep']));
  expect(hostile('scimPatchUser')).toEqual(expect.arrayContaining(['body.Operations.0.path: __proto__', 'body.Operations.0.value: a "__proto__" key']));
  expect(hostile('scimListUsers')).toEqual(expect.arrayContaining(['query.filter: __proto__ pr', 'query.attributes: constructor']));
});

describe.each(operations.map((op) => [op.operationId, op] as const))('%s', (_id, op) => {
  it(`refuses up to ${BAD_REQUESTS_PER_OPERATION} generated bad requests with a 4xx and changes nothing`, async () => {
    const { requests, hostile } = requestsFor(op);
    const auth = ownerCredential(op, world);
    const before = await snapshot(t.db);
    const problems: string[] = [];
    for (const req of requests) {
      const res = await send(t, req, auth);
      const problem = problemWith(req, res, op.auth === 'scim' ? 'scim' : 'default');
      if (problem) problems.push(`${req.label}: ${problem}`);
    }
    if (hostile) {
      for (const key of POLLUTION_MARKERS) {
        if (({} as Record<string, unknown>)[key] !== undefined) problems.push(`Object.prototype.${key} was written`);
        delete (Object.prototype as Record<string, unknown>)[key];
      }
      const health = await t.http.get('/health');
      if (health.status !== 200) problems.push(`/health answered ${health.status} afterwards`);
    }
    const changes = snapshotDiff(before, await snapshot(t.db));
    expect({ problems, changes }).toEqual({ problems: [], changes: [] });
  });
});

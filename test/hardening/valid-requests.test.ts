import { createTestApp, type TestApp } from '../support/app';
import { declaredStatuses, specOperations, type SpecOperation } from '../support/spec';
import { ownerCredential, send, validRequests, type GenRequest } from './generate';
import { buildWorld, type OrgWorld } from './world';
import { bootstrapRoot, KNOWN_GOOD, knownGoodSettings, type Known } from './known-good';

/**
 * Valid random requests for every operation (bodies and query values drawn from the schema, ids
 * from a real organization; one request for an operation that takes neither). The test app checks every response against the contract, so a
 * mismatch is a 500: "never a 5xx" covers both crashes and wrong shapes. Every answer must be one
 * the operation declares (a valid request may still be refused, e.g. 404 for an id it names, 409
 * for a name taken, but only with a status the contract tells clients to expect; 429 is the one
 * answer any operation may give). A 5xx the operation declares itself (502 from an upstream) is
 * its documented answer; 501 is accepted only for operations still listed as not implemented.
 *
 * And every operation must succeed (a 2xx) at least once: a walk whose requests are all refused
 * says nothing about the operation's success path (its answer's shape, its 5xx). Where a random
 * request cannot succeed (a token only a mail carries, a code only an authenticator computes, a
 * state the operation's start made), known-good.ts hands one request that can, after any steps it
 * needs; it is sent after the random ones and held to the same rules.
 */
const PER_OPERATION = 5;
let t: TestApp;
let world: OrgWorld;
let known: Known;
/** The 2xx of bootstrap: it succeeds only on an empty platform, so it is sent before the world exists. */
const before: Record<string, number[]> = {};
beforeAll(async () => {
  const kit = await knownGoodSettings();
  t = await createTestApp({ settings: kit.settings, env: kit.env });
  const root = await bootstrapRoot(t);
  before.bootstrap = [root.status];
  world = await buildWorld(t, 'V');
  known = { t, world, root: root.token, fakes: kit.fakes };
}, 240_000);
afterAll(async () => {
  await t.close();
  await known?.fakes.stop();
});

/**
 * Reads first, then writes, then what removes things or replaces a credential: a part before its
 * whole (a grant before its resource), an archive before a deletion, the directory's deletions
 * (a SCIM Group is a team) after the API's, and last the SCIM token and the target member, which
 * other removals use. Then what changes the caller's organization or session as a whole, in this
 * order: the plan, the deletion and its undoing, the ownership, a new organization (the session
 * switches to it), signing out.
 */
const LAST = ['adminUpdateOrganization', 'deleteOrg', 'restoreOrg', 'transferOwnership', 'createOrg', 'signOut'];
const CREDENTIALS = ['revokeScimToken', 'removeMember'];
function phase(op: SpecOperation): number {
  if (LAST.includes(op.operationId)) return 3 + LAST.indexOf(op.operationId);
  if (CREDENTIALS.includes(op.operationId)) return 2.9;
  if (op.method === 'delete' || /\/(delete|archive|cancel|disconnect-my-account|rotate)$/.test(op.path) || /^remove/.test(op.operationId)) {
    if (op.auth === 'scim') return 2.8;
    return 2.5 - op.path.split('/').length / 100 - (op.path.endsWith('/archive') ? 0.001 : 0);
  }
  return op.method === 'get' ? 0 : 1;
}
const operations = [...specOperations()].sort((x, y) => phase(x) - phase(y));

/** Whether the operation takes anything to draw (a body, a query value): without, its five requests would be one request five times. */
function drawsInput(op: SpecOperation): boolean {
  return op.body !== null || op.parameters.some((p) => p.in === 'query' && p.name !== 'cursor');
}

/** The credential for the operation: a platform admin's session where the operation is theirs, else the world owner's. */
function credential(op: SpecOperation): Record<string, string> {
  return op.platformAdmin ? { authorization: `Bearer ${known.root}` } : ownerCredential(op, world);
}

describe.each(operations.map((op) => [op.operationId, op] as const))('%s', (_id, op) => {
  it('answers valid random requests with declared statuses only, never an undeclared 5xx, and succeeds at least once', async () => {
    const headers = credential(op);
    const declared = declaredStatuses(op);
    const wrong: string[] = [];
    const statuses = [...(before[op.operationId] ?? [])];
    const check = async (req: GenRequest) => {
      const res = await send(t, req, headers);
      statuses.push(res.status);
      const allowed =
        res.status < 500
          ? declared.includes(res.status) || res.status === 429
          : declared.includes(res.status) && ![500, 503].includes(res.status);
      if (!allowed) wrong.push(`${req.label} ${JSON.stringify(req.body ?? req.query).slice(0, 160)} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      return res;
    };
    for (const req of validRequests(op, world, drawsInput(op) ? PER_OPERATION : 1)) await check(req);
    const hand = KNOWN_GOOD[op.operationId];
    if (hand) await check(await hand(known, op));
    expect(wrong).toEqual([]);
    expect({ operation: op.operationId, succeeded: statuses.some((s) => s >= 200 && s < 300), statuses }).toEqual({ operation: op.operationId, succeeded: true, statuses });
  });
});

import { createTestApp, type TestApp } from '../support/app';
import { declaredStatuses, specOperations, type SpecOperation } from '../support/spec';
import { ownerCredential, send, validRequests } from './generate';
import { buildWorld, type OrgWorld } from './world';

/**
 * Valid random requests for every operation (bodies and query values drawn from the schema, ids
 * from a real organization). The test app checks every response against the contract, so a
 * mismatch is a 500: "never a 5xx" covers both crashes and wrong shapes. Every answer must be one
 * the operation declares (a valid request may still be refused, e.g. 404 for an id it names, 409
 * for a name taken, but only with a status the contract tells clients to expect; 429 is the one
 * answer any operation may give). A 5xx the operation declares itself (502 from an upstream) is
 * its documented answer; 501 is accepted only for operations still listed as not implemented.
 */
const PER_OPERATION = 5;
let t: TestApp;
let world: OrgWorld;
beforeAll(async () => {
  t = await createTestApp();
  world = await buildWorld(t, 'V');
}, 240_000);
afterAll(() => t.close());

/** Reads first, then writes, then what removes things (so earlier operations still find their ids). */
function phase(op: SpecOperation): number {
  if (op.operationId === 'signOut') return 3;
  if (op.method === 'delete' || /\/(delete|archive|cancel|disconnect-my-account)$/.test(op.path) || /^remove/.test(op.operationId)) return 2;
  return op.method === 'get' ? 0 : 1;
}
const operations = [...specOperations()].sort((x, y) => phase(x) - phase(y));

describe.each(operations.map((op) => [op.operationId, op] as const))('%s', (_id, op) => {
  it(`answers ${PER_OPERATION} valid random requests with declared statuses only, never an undeclared 5xx`, async () => {
    const headers = ownerCredential(op, world);
    const declared = declaredStatuses(op);
    const wrong: string[] = [];
    for (const req of validRequests(op, world, PER_OPERATION)) {
      const res = await send(t, req, headers);
      const allowed =
        res.status < 500
          ? declared.includes(res.status) || res.status === 429
          : declared.includes(res.status) && ![500, 503].includes(res.status);
      if (!allowed) wrong.push(`${req.label} ${JSON.stringify(req.body ?? req.query).slice(0, 160)} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    expect(wrong).toEqual([]);
  });
});

import { createTestApp, type TestApp } from '../support/app';
import { specOperations } from '../support/spec';
import { snapshot, snapshotDiff } from '../support/snapshot';
import { send } from './generate';
import { buildWorld, type OrgWorld } from './world';
import { outboundFields, outboundTargetRequests, unmarkedUrlFields } from './outbound-targets';

/**
 * Every operation whose body takes a tenant-supplied URL (`x-outbound-url: true` in the contract)
 * refuses each disallowed target (loopback, metadata, RFC 1918, CGNAT, IPv6 loopback and
 * unique-local, IPv4-mapped, localhost) with 400 naming that field, and stores nothing. The app
 * runs with the default egress policy (no OUTBOUND_ALLOWED_NETWORKS).
 */
let t: TestApp;
let world: OrgWorld;
beforeAll(async () => {
  t = await createTestApp();
  world = await buildWorld(t, 'A');
}, 120_000);
afterAll(() => t.close());

const operations = specOperations().filter((op) => outboundFields(op).length > 0);

it('every URL-looking body field declares whether the service calls it (x-outbound-url)', () => {
  expect(specOperations().flatMap(unmarkedUrlFields)).toEqual([]);
  expect(operations.map((op) => op.operationId)).toEqual(expect.arrayContaining(['createWorker', 'updateWorker', 'createMcpConnection', 'updateMcpConnection']));
});

describe.each(operations.map((op) => [op.operationId, op] as const))('%s', (_id, op) => {
  it('refuses every disallowed outbound target with 400 naming the field, and stores nothing', async () => {
    const auth: Record<string, string> = op.auth === 'public' ? {} : { authorization: `Bearer ${world.owner.token}` };
    const before = await snapshot(t.db);
    const problems: string[] = [];
    for (const req of outboundTargetRequests(op, world)) {
      const res = await send(t, req, auth);
      const details = (res.body?.details ?? []) as { path: string[] }[];
      const named = details.some((d) => JSON.stringify(d.path) === JSON.stringify(req.expectPath));
      if (res.status !== 400 || res.body.error !== 'invalid_request' || !named) problems.push(`${req.label}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    }
    expect({ problems, changes: snapshotDiff(before, await snapshot(t.db)) }).toEqual({ problems: [], changes: [] });
  });
});

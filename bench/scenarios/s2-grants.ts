import { newId } from '../../src/lib/ids';
import { deriveKey } from '../../src/lib/crypto';
import { Cursors } from '../../src/lib/pagination';
import { insertGrants, type NewGrant } from '../../src/grants/store';
import { MARKETPLACE } from '../../src/grants/resources';
import { SECRET_KEY, type BenchContext } from '../lib/context';
import { measureRounds, type LoadOptions, type Measurement } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const GRANTS = 100_000;
const CONNECTIONS = 8;
const CHUNK = 2000;

/**
 * Scenario 2: GET /v1/marketplaces/{id}/access, the first page and a page 50,000 grants deep, on a
 * marketplace with 100,000 grants (a long history: the newest 150 are active grants to distinct
 * members, the rest revoked, as grant/revoke cycles leave them). Keyset paging should make both
 * cost the same.
 */
export async function scenarioGrants(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '2',
    title: 'GET /v1/marketplaces/{id}/access: first page vs a page 50,000 deep in 100,000 grants',
    setup: [
      `${CONNECTIONS} connections, ${ctx.warmup} s warm-up + ${ctx.duration} s measured per page, default page size (50)`,
      `${GRANTS.toLocaleString('en')} grants on one marketplace seeded through the grants store (multi-row inserts), then ANALYZE; the deep cursor points at grant 50,000 (minted with the service's cursor key)`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const db = ctx.scratch.database.db;
  const org = await seedOrganization(db, { name: 'Grants Org', members: 200, teams: 5 });
  const service = await ctx.startService('s2-service');
  try {
    const auth = { authorization: `Bearer ${org.callerToken}` };
    const created = await fetch(`${service.url}/v1/marketplaces`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bench marketplace', description: 'Grants benchmark' }),
    });
    if (created.status === 501) {
      result.skipped = 'POST /v1/marketplaces is not implemented yet';
      return result;
    }
    if (created.status !== 201) throw new Error(`create marketplace answered ${created.status}: ${await created.text()}`);
    const marketplaceId = ((await created.json()) as { item: { id: string } }).item.id;

    // Newest first: grant i was created i seconds before the newest (index 0).
    const newest = Date.now() - 1000;
    const positions: { createdAt: Date; id: string }[] = [];
    for (let from = 0; from < GRANTS; from += CHUNK) {
      const rows: (NewGrant & { removedAt: Date | null })[] = [];
      for (let i = from; i < Math.min(GRANTS, from + CHUNK); i++) {
        const active = i < 150;
        const createdAt = new Date(newest - (i + 1) * 1000);
        const id = newId('marketplaceGrant');
        positions.push({ createdAt, id });
        rows.push({
          id,
          organizationId: org.organizationId,
          resourceId: marketplaceId,
          target: { memberId: org.memberIds[2 + (i % 150)]! },
          role: 'viewer',
          createdByMemberId: org.callerMemberId,
          now: createdAt,
          removedAt: active ? null : new Date(createdAt.getTime() + 500),
        });
      }
      await insertGrants(db, MARKETPLACE, rows);
    }
    await ctx.scratch.analyze();
    const deep = new Cursors(deriveKey(SECRET_KEY, 'cursor')).encode(MARKETPLACE.listName, positions[50_000 - 1]!);
    const path = `/v1/marketplaces/${marketplaceId}/access`;

    // Same shape at both depths before comparing speed.
    for (const p of [path, `${path}?cursor=${encodeURIComponent(deep)}`]) {
      const res = await fetch(`${service.url}${p}`, { headers: auth });
      const body = (await res.json()) as { items?: unknown[] };
      if (res.status !== 200 || body.items?.length !== 50) throw new Error(`${p} answered ${res.status} with ${body.items?.length} items`);
    }
    // Alternating rounds (as scenarios 1 and 11): measured one after the other, a drift of the
    // machine's other load lands on one page only.
    const page = (label: string, pagePath: string): LoadOptions => ({ label, url: service.url, path: pagePath, headers: auth, connections: CONNECTIONS, duration: ctx.duration, warmup: ctx.warmup, targets: [service] });
    const [first, deepPage] = (await measureRounds([page('first page', path), page('page at 50,000', `${path}?cursor=${encodeURIComponent(deep)}`)], 4)) as [Measurement, Measurement];
    result.rows = [first, deepPage];
    result.checks.push(
      check('p50 deep / first', deepPage.p50 / first.p50, '<=', 1.2),
      check('p99 deep / first', deepPage.p99 / first.p99, '<=', 1.2),
      check('errors + non-2xx', first.errors + first.non2xx + deepPage.errors + deepPage.non2xx, '<=', 0),
    );
    const plan = await ctx.scratch.pool.query(
      `EXPLAIN SELECT id FROM marketplace_grants g WHERE g.marketplace_id = $1 AND g.organization_id = $2 AND (g.created_at, g.id) < ($3, $4) ORDER BY g.created_at DESC, g.id DESC LIMIT 51`,
      [marketplaceId, org.organizationId, positions[49_999]!.createdAt, positions[49_999]!.id],
    );
    result.notes.push(`deep page plan: ${plan.rows.map((r: Record<string, string>) => Object.values(r)[0]!.trim()).join(' / ')}`);
    return result;
  } finally {
    await service.stop();
  }
}

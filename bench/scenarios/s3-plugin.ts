import { newId } from '../../src/lib/ids';
import type { BenchContext } from '../lib/context';
import { measure, measureLoop } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const COMPONENTS = 100;
/**
 * Latency is compared at 1 connection (no queueing), then at 4 (throughput under load, where the
 * service also queues for the 2 cores it shares with the load generator and Postgres, and the
 * in-process floor does not pay for a client).
 */
const CONCURRENCY = [1, 4] as const;

/** A realistic component: some source text, a normalized payload, parser facts, metadata (~400 bytes). */
function component(i: number) {
  return {
    input: {
      rawSourceText: `# Skill ${i}\nDescribe what this component does, with enough words to look like a real one. `.repeat(2),
      normalizedPayloadJson: { kind: i % 10 === 0 ? 'setup' : 'resource', name: `component-${i}`, uri: `bench://component/${i}`, tags: ['a', 'b'] },
      parserMode: 'markdown',
      schemaVersion: '1',
      metadata: { index: i, source: 'bench' },
    },
  };
}

/**
 * Scenario 3: POST /v1/plugins with 100 components (one transaction in the service: plugin,
 * components, creator grant), against the floor: the same rows written straight through pg
 * (BEGIN; INSERT plugin; one multi-row INSERT of 100 components; INSERT grant; COMMIT) by the
 * same number of concurrent loops, with no HTTP, no validation, no JSON body parsing.
 */
export async function scenarioPlugin(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '3',
    title: 'POST /v1/plugins with 100 components vs the same rows through pg',
    setup: [
      `${CONCURRENCY.join(' and ')} connections (service) / as many concurrent loops on a pg pool (floor), ${ctx.warmup} s warm-up + ${ctx.duration} s measured each`,
      'body: name, description, 100 components of ~400 bytes (≈45 KB JSON); caller is an organization admin',
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const org = await seedOrganization(ctx.scratch.database.db, { name: 'Plugin Org', members: 20, teams: 2 });
  await ctx.scratch.analyze();
  const components = Array.from({ length: COMPONENTS }, (_, i) => component(i));
  const body = JSON.stringify({ name: 'Bench plugin', description: 'A plugin with 100 components', components });
  result.setup.push(`request body ${(body.length / 1024).toFixed(0)} KB`);

  const service = await ctx.startService('s3-service');
  try {
    const headers = { authorization: `Bearer ${org.callerToken}`, 'content-type': 'application/json' };
    const probe = await fetch(`${service.url}/v1/plugins`, { method: 'POST', headers, body });
    if (probe.status === 501) {
      result.skipped = 'POST /v1/plugins is not implemented yet';
      return result;
    }
    const probeBody = (await probe.json()) as { item?: { memberCount?: number } };
    if (probe.status !== 201 || probeBody.item?.memberCount !== COMPONENTS) throw new Error(`POST /v1/plugins answered ${probe.status}: ${JSON.stringify(probeBody).slice(0, 300)}`);
    for (const connections of CONCURRENCY) {
      const measured = await measure({ label: `service, ${connections} conn`, url: service.url, path: '/v1/plugins', method: 'POST', headers, body, connections, duration: ctx.duration, warmup: ctx.warmup, targets: [service] });
      measured.extra = { components_per_s: measured.rps * COMPONENTS };
      result.rows.push(measured);
    }
  } finally {
    await service.stop();
  }

  const pool = ctx.scratch.pool;
  const inputs = components.map((c) => JSON.stringify(c.input));
  const writeFloorRows = async () => {
      const client = await pool.connect();
      try {
        const now = new Date();
        const pluginId = newId('plugin');
        await client.query('BEGIN');
        await client.query(
          `INSERT INTO plugins (id, organization_id, name, description, status, source_format, source_origin, source_trusted, source_reference, created_by_member_id, created_at, updated_at)
           VALUES ($1, $2, $3, $4, 'active', 'custom', 'organization', false, $5, $6, $7, $7)`,
          [pluginId, org.organizationId, 'Bench plugin', 'A plugin with 100 components', `plugin:${pluginId}`, org.callerMemberId, now],
        );
        const values: unknown[] = [];
        const tuples = inputs.map((input, i) => {
          values.push(newId('pluginComponent'), i, i % 10 === 0 ? 'setup' : 'resource', input);
          const b = i * 4;
          return `($${b + 1}, $${inputs.length * 4 + 1}, $${inputs.length * 4 + 2}, $${b + 2}, $${b + 3}, $${b + 4}::jsonb, $${inputs.length * 4 + 3})`;
        });
        values.push(org.organizationId, pluginId, now);
        await client.query(`INSERT INTO plugin_components (id, organization_id, plugin_id, position, type, input, created_at) VALUES ${tuples.join(', ')}`, values);
        await client.query(
          `INSERT INTO plugin_grants (id, organization_id, plugin_id, member_id, org_wide, role, created_by_member_id, created_at) VALUES ($1, $2, $3, $4, false, 'manager', $4, $5)`,
          [newId('pluginGrant'), org.organizationId, pluginId, org.callerMemberId, now],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
  };
  const serviceRows = [...result.rows];
  for (const [i, connections] of CONCURRENCY.entries()) {
    const floor = await measureLoop(`floor: pg, one transaction, ${connections} loop${connections > 1 ? 's' : ''}`, connections, ctx.duration, writeFloorRows, ctx.warmup);
    if (floor.requests === 0) throw new Error(`the floor failed on every transaction (${floor.errors} errors)`);
    floor.extra = { components_per_s: floor.rps * COMPONENTS };
    result.rows.push(floor);
    const measured = serviceRows[i]!;
    result.checks.push(
      check(`p50 service / floor at ${connections} conn`, measured.p50 / floor.p50, '<=', 1.5),
      check(`p99 service / floor at ${connections} conn`, measured.p99 / floor.p99, '<=', 1.5),
      check(`service errors + non-2xx at ${connections} conn`, measured.errors + measured.non2xx, '<=', 0),
    );
  }
  return result;
}

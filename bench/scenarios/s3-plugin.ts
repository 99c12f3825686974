import { randomUUID } from 'node:crypto';
import { newId } from '../../src/lib/ids';
import { canonicalJson } from '../../src/audit/canonical';
import type { PoolClient } from 'pg';
import type { BenchContext } from '../lib/context';
import { measureRounds, type LoopLoad, type LoadOptions, type Measurement } from '../lib/load';
import { check, type ScenarioResult } from '../lib/report';
import { seedOrganization } from '../seed/org';

const COMPONENTS = 100;
/** Plugins the organization holds before the run (see the seed below). */
const EXISTING_PLUGINS = 1000;
/**
 * Latency is compared at 1 connection (no queueing), then at 4 (throughput under load, where the
 * service also queues for the 2 cores it shares with the load generator and Postgres, and the
 * in-process floor does not pay for a client).
 */
const CONCURRENCY = [1, 4] as const;
/** Service and floors take turns (4 rounds of a quarter of the window each), so drifting background load hits them alike. */
const ROUNDS = 4;

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
 * Scenario 3: POST /v1/plugins with 100 components (the service writes the plugin, its components,
 * the creator's grant, the audit entry and its event, atomically), against the floor: the same
 * rows written straight through pg in one transaction (BEGIN; INSERT plugin; one multi-row INSERT
 * of 100 components; INSERT grant; INSERT event; INSERT its deliveries for the matching webhook
 * endpoints (none here); move the organization's audit chain head; INSERT the audit entry; COMMIT)
 * by the same number of concurrent loops, with no HTTP, no validation, no JSON body parsing. The
 * floor of the earlier runs (plugin, components and grant only, without the audit entry and event
 * the service must write) is measured too, so both ratios are printed.
 */
export async function scenarioPlugin(ctx: BenchContext): Promise<ScenarioResult> {
  const result: ScenarioResult = {
    id: '3',
    title: 'POST /v1/plugins with 100 components vs the same rows through pg',
    setup: [
      `${CONCURRENCY.join(' and ')} connections (service) / as many concurrent loops on a pg pool (floors), ${ctx.warmup} s warm-up + ${ctx.duration} s measured each, in ${ROUNDS} alternating rounds (service, floor, earlier floor)`,
      'body: name, description, 100 components of ~400 bytes (≈45 KB JSON); caller is an organization admin',
      `the organization holds ${EXISTING_PLUGINS} plugins before the run (then ANALYZE), so the components' foreign-key checks find their plugin through its index`,
    ],
    rows: [],
    checks: [],
    notes: [],
  };
  const org = await seedOrganization(ctx.scratch.database.db, { name: 'Plugin Org', members: 20, teams: 2 });
  // An organization that already has plugins, analysed as such: with the plugins table nearly empty
  // at ANALYZE, Postgres checks every component's foreign key to its plugin with a sequential scan
  // of plugins, which grows with every plugin the run writes (the service's and the floor's alike).
  const existing = Array.from({ length: EXISTING_PLUGINS }, () => newId('plugin'));
  await ctx.scratch.pool.query(
    `INSERT INTO plugins (id, organization_id, name, description, status, source_format, source_origin, source_trusted, source_reference, created_by_member_id, created_at, updated_at)
     SELECT p.id, $2, 'Existing ' || p.n, '', 'active', 'custom', 'organization', false, 'plugin:' || p.id, $3, now(), now()
     FROM unnest($1::text[]) WITH ORDINALITY AS p(id, n)`,
    [existing, org.organizationId, org.callerMemberId],
  );
  await ctx.scratch.analyze();
  const components = Array.from({ length: COMPONENTS }, (_, i) => component(i));
  const body = JSON.stringify({ name: 'Bench plugin', description: 'A plugin with 100 components', components });
  result.setup.push(`request body ${(body.length / 1024).toFixed(0)} KB`);

  const pool = ctx.scratch.pool;
  const inputs = components.map((c) => JSON.stringify(c.input));
  const types = components.map((_, i) => (i % 10 === 0 ? 'setup' : 'resource'));
  const callerUserId = (await pool.query<{ user_id: string }>('SELECT user_id FROM members WHERE id = $1', [org.callerMemberId])).rows[0]!.user_id;
  /** Plugin, components and creator grant (BEGIN already sent); the plugin's id. */
  const writePluginRows = async (client: PoolClient, now: Date) => {
    const pluginId = newId('plugin');
    await client.query(
      `INSERT INTO plugins (id, organization_id, name, description, status, source_format, source_origin, source_trusted, source_reference, created_by_member_id, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'active', 'custom', 'organization', false, $5, $6, $7, $7)`,
      [pluginId, org.organizationId, 'Bench plugin', 'A plugin with 100 components', `plugin:${pluginId}`, org.callerMemberId, now],
    );
    const values: unknown[] = [];
    const tuples = inputs.map((input, i) => {
      values.push(newId('pluginComponent'), i, types[i], input);
      const b = i * 4;
      return `($${b + 1}, $${inputs.length * 4 + 1}, $${inputs.length * 4 + 2}, $${b + 2}, $${b + 3}, $${b + 4}::jsonb, $${inputs.length * 4 + 3})`;
    });
    values.push(org.organizationId, pluginId, now);
    await client.query(`INSERT INTO plugin_components (id, organization_id, plugin_id, position, type, input, created_at) VALUES ${tuples.join(', ')}`, values);
    await client.query(
      `INSERT INTO plugin_grants (id, organization_id, plugin_id, member_id, org_wide, role, created_by_member_id, created_at) VALUES ($1, $2, $3, $4, false, 'manager', $4, $5)`,
      [newId('pluginGrant'), org.organizationId, pluginId, org.callerMemberId, now],
    );
    return pluginId;
  };
  /** The audit entry and its event as the service writes them (same columns, same hash chain, deliveries for matching endpoints). */
  const writeAuditRows = async (client: PoolClient, now: Date, pluginId: string) => {
    const changes = {
      name: { from: null, to: 'Bench plugin' },
      description: { from: null, to: 'A plugin with 100 components' },
      orgWide: { from: null, to: false },
      componentTypes: { from: null, to: types },
    };
    const target = { type: 'plugin', id: pluginId };
    const entry = {
      id: newId('auditEntry'),
      organizationId: org.organizationId,
      action: 'plugin.created',
      actor: { type: 'member', id: callerUserId, memberId: org.callerMemberId },
      target,
      changes,
      requestId: randomUUID(),
      ip: '127.0.0.1',
      userAgent: null,
      createdAt: now.toISOString(),
    };
    const eventId = newId('event');
    await client.query(`INSERT INTO events (id, organization_id, type, data, created_at) VALUES ($1, $2, 'plugin.created', $3::jsonb, $4)`, [
      eventId,
      org.organizationId,
      JSON.stringify({ target, changes }),
      now,
    ]);
    await client.query(
      `INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, event_type, status, next_attempt_at, created_at, updated_at)
       SELECT ($1::text[])[m.n], $2, m.id, $3, 'plugin.created', 'pending', $4, $4, $4
       FROM (SELECT e.id, row_number() OVER (ORDER BY e.id) AS n FROM webhook_endpoints e
             WHERE e.organization_id = $2 AND e.enabled AND e.events && ARRAY['*', 'plugin.created', 'plugin.*']) m`,
      [Array.from({ length: 8 }, () => newId('webhookDelivery')), org.organizationId, eventId, now],
    );
    const canonical = canonicalJson(entry);
    const head = await client.query<{ seq: string; prev_hash: string; hash: string }>(
      `INSERT INTO audit_chain_heads AS h (organization_id, seq, prev_hash, hash, last_at)
       VALUES ($1, 1, '', encode(sha256(convert_to($2::text, 'UTF8')), 'hex'), $3)
       ON CONFLICT (organization_id) DO UPDATE
         SET seq = h.seq + 1, prev_hash = h.hash, hash = encode(sha256(convert_to(h.hash || $2::text, 'UTF8')), 'hex'), last_at = excluded.last_at
       RETURNING seq, prev_hash, hash`,
      [org.organizationId, canonical, now],
    );
    const { seq, prev_hash, hash } = head.rows[0]!;
    await client.query(
      `INSERT INTO audit_logs (id, organization_id, seq, action, actor_type, actor_id, actor_member_id, target_type, target_id, changes, request_id, ip, user_agent, created_at, prev_hash, hash)
       VALUES ($1, $2, $3, 'plugin.created', 'member', $4, $5, 'plugin', $6, $7::jsonb, $8, $9, $10, $11, $12, $13)`,
      [entry.id, org.organizationId, seq, callerUserId, org.callerMemberId, pluginId, JSON.stringify(changes), entry.requestId, entry.ip, entry.userAgent, now, prev_hash, hash],
    );
  };
  const floorOf = (audited: boolean) => async () => {
    const client = await pool.connect();
    try {
      const now = new Date();
      await client.query('BEGIN');
      const pluginId = await writePluginRows(client, now);
      if (audited) await writeAuditRows(client, now, pluginId);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  };
  const service = await ctx.startService('s3-service');
  // --previous: the earlier build writing the same requests into the same organization.
  const previous = ctx.startPrevious ? await ctx.startPrevious('s3-previous') : null;
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
      const loops = `${connections} loop${connections > 1 ? 's' : ''}`;
      const loop = (label: string, audited: boolean): LoopLoad => ({ label, concurrency: connections, work: floorOf(audited), duration: ctx.duration, warmup: ctx.warmup });
      const http: LoadOptions = { label: `service, ${connections} conn`, url: service.url, path: '/v1/plugins', method: 'POST', headers, body, connections, duration: ctx.duration, warmup: ctx.warmup, targets: [service] };
      const earlierBuild: LoadOptions[] = previous ? [{ ...http, label: `previous build, ${connections} conn`, url: previous.url, targets: [previous] }] : [];
      const [measured, floor, before, prior] = (await measureRounds(
        [http, loop(`floor: pg, the same rows in one transaction, ${loops}`, true), loop(`earlier floor: without the audit entry and event, ${loops}`, false), ...earlierBuild],
        ROUNDS,
      )) as [Measurement, Measurement, Measurement, Measurement | undefined];
      if (prior) {
        result.rows.push(prior);
        result.checks.push(check(`p50 service / previous build at ${connections} conn`, measured.p50 / prior.p50, '<=', 1.05));
      }
      if (floor.requests === 0 || before.requests === 0) throw new Error(`a floor failed on every transaction (${floor.errors + before.errors} errors)`);
      for (const m of [measured, floor, before]) {
        m.extra = { components_per_s: m.rps * COMPONENTS };
        result.rows.push(m);
      }
      result.checks.push(
        check(`p50 service / floor at ${connections} conn`, measured.p50 / floor.p50, '<=', 1.5),
        check(`p99 service / floor at ${connections} conn`, measured.p99 / floor.p99, '<=', 1.5),
        check(`service errors + non-2xx at ${connections} conn`, measured.errors + measured.non2xx, '<=', 0),
      );
      const cpuMs = measured.cpuCores !== null && measured.rps > 0 ? ((measured.cpuCores * 1000) / measured.rps).toFixed(2) : '—';
      result.notes.push(
        `at ${connections} conn against the earlier floor (no audit entry, no event): p50 ${(measured.p50 / before.p50).toFixed(2)}, p99 ${(measured.p99 / before.p99).toFixed(2)}; service CPU ${cpuMs} ms per request`,
      );
    }
  } finally {
    await service.stop();
    await previous?.stop();
  }

  return result;
}

import { sql } from 'kysely';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Invalid, type ErrorDetail } from '../lib/errors';
import { requireFeature } from '../plans';
import { newId } from '../lib/ids';
import { countActiveMembers } from '../members/memberships';
import { countPendingInvitations } from '../invitations/service';
import { writeBatch } from './ingest';
import type { EventRow } from './ingest-store';
import { analyticsRange } from './range';
import { summaryFigures } from './summary-queries';
import { DAY_MS } from './time';

type Schemas = components['schemas'];

/** Timestamps before this are refused as clock garbage, as are those more than a day ahead. */
const EARLIEST_EVENT = Date.UTC(2000, 0, 1);
const MAX_FUTURE_MS = DAY_MS;


/** Checks the batch's timestamps, then stores all of it or none of it (./ingest.ts). */
export async function ingest(deps: AppDeps, membership: Membership, events: Schemas['TelemetryEventInput'][]): Promise<number> {
  const now = deps.clock.now();
  const problems: ErrorDetail[] = [];
  const times = events.map((event, index) => {
    const at = new Date(event.timestamp);
    const ms = at.getTime();
    if (Number.isNaN(ms) || ms < EARLIEST_EVENT || ms > now.getTime() + MAX_FUTURE_MS) {
      problems.push({ message: 'must be a time from 2000-01-01 up to 24 hours from now', path: ['body', 'events', String(index), 'timestamp'] });
    }
    return at;
  });
  if (problems.length > 0) throw new Invalid(problems);

  const rows: EventRow[] = events.map((event, index) => ({
    id: newId('telemetryEvent'),
    organizationId: membership.organizationId,
    memberId: membership.memberId,
    type: event.type,
    occurredAt: times[index]!,
    receivedAt: now,
    sessionId: event.sessionId ?? null,
    durationMs: event.durationMs ?? null,
    success: event.success ?? null,
    dimensions: event.dimensions ?? [],
  }));

  await writeBatch(deps.db, membership.organizationId, membership.memberId, now, rows);
  return rows.length;
}

export interface AnalyticsQuery {
  dimensionType?: string;
  dimensionValue?: string;
}

/** GET /v1/telemetry/analytics (docs/workers-and-usage.md#workers-telemetry-and-analytics); the figures are defined in the UsageAnalytics schema of the contract. */
export async function usageAnalytics(deps: AppDeps, membership: Membership, query: AnalyticsQuery): Promise<Schemas['UsageAnalytics']> {
  const { dimensionType, dimensionValue } = query;
  if ((dimensionType === undefined) !== (dimensionValue === undefined)) {
    const missing = dimensionType === undefined ? 'dimensionType' : 'dimensionValue';
    throw Invalid.at(['query', missing], 'dimensionType and dimensionValue go together');
  }
  await requireFeature(deps.db, deps.settings, membership.organizationId, 'analytics');

  const range = analyticsRange(deps.clock.now(), membership.organizationId, dimensionType !== undefined ? { type: dimensionType, value: dimensionValue! } : null);
  const { db } = deps;
  // From the summaries, kept per dimension too (cost nearly independent of the data size).
  // One connection, serial plans: these queries read a few thousand index entries, where starting
  // parallel workers costs more (several ms) than the scan it would split.
  const { members, pendingInvites, windows, weeks } = await db.transaction().execute(async (trx) => {
    await sql`SET LOCAL max_parallel_workers_per_gather = 0`.execute(trx);
    return {
      members: await countActiveMembers(trx, membership.organizationId),
      pendingInvites: await countPendingInvitations(trx, membership.organizationId, range.now),
      ...(await summaryFigures(trx, range)),
    };
  });

  const firstWeek = new Date(`${range.firstWeek}T00:00:00.000Z`).getTime();
  const weekly = Array.from({ length: 12 }, (_, week) => {
    const found = weeks.find((w) => w.week === week);
    return {
      weekStart: new Date(firstWeek + week * 7 * DAY_MS).toISOString(),
      activeMembers: found?.activeMembers ?? 0,
      sessions: found?.sessions ?? 0,
      tasksCompleted: found?.tasksCompleted ?? 0,
      tasksFailed: found?.tasksFailed ?? 0,
    };
  });
  return {
    members,
    pendingInvites,
    activeMembers7d: windows.active7,
    activeMembers30d: windows.active30,
    sessions7d: windows.sessions7,
    sessions30d: windows.sessions30,
    tasksCompleted7d: windows.completed7,
    tasksFailed7d: windows.failed7,
    tasksCompleted30d: windows.completed30,
    tasksFailed30d: windows.failed30,
    avgTaskDurationMs30d: windows.durationCount30 > 0 ? Math.round(windows.durationSum30 / windows.durationCount30) : 0,
    weekly,
  };
}

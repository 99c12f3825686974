import { sql } from 'kysely';
import type { components } from '../../generated/api';
import type { AppDeps, Membership } from '../http/types';
import { requireAdmin } from '../access/roles';
import { Invalid, type ErrorDetail } from '../lib/errors';
import { requireFeature } from '../plans';
import { newId } from '../lib/ids';
import * as store from './store';

type Schemas = components['schemas'];

const DAY_MS = 86_400_000;
/** Timestamps before this are refused as clock garbage, as are those more than a day ahead. */
const EARLIEST_EVENT = Date.UTC(2000, 0, 1);
const MAX_FUTURE_MS = DAY_MS;

const dayOf = (date: Date): string => date.toISOString().slice(0, 10);
const HOUR_MS = 3_600_000;
const startOfDay = (date: Date): Date => new Date(Math.floor(date.getTime() / DAY_MS) * DAY_MS);
const startOfHour = (date: Date): Date => new Date(Math.floor(date.getTime() / HOUR_MS) * HOUR_MS);
/** Monday 00:00 UTC of the ISO week holding `date`. */
const startOfWeek = (date: Date): Date => {
  const day = startOfDay(date);
  return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * DAY_MS);
};

/**
 * Stores every event of the batch, or none: the events, the session tags and the rollups
 * are written in one transaction, so analytics never sees half a batch and a database error
 * fails the request instead of dropping events.
 */
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

  const rows: store.EventRow[] = events.map((event, index) => ({
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

  const tags = new Map<string, store.SessionTag>();
  const hourly = new Map<string, store.HourlyDelta>();
  const sessionHours = new Map<string, { sessionId: string; hour: Date }>();
  const days = new Set<string>();
  const daily = new Map<string, store.DailyDelta>();
  const weeklyKeys = new Map<string, store.WeeklyKey>();
  for (const row of rows) {
    const day = dayOf(row.occurredAt);
    const week = dayOf(startOfWeek(row.occurredAt));
    const hour = startOfHour(row.occurredAt);
    days.add(day);
    weeklyKeys.set(`${week} m ${row.memberId}`, { week, kind: 'm', key: row.memberId });
    if (row.sessionId !== null) {
      weeklyKeys.set(`${week} s ${row.sessionId}`, { week, kind: 's', key: row.sessionId });
      sessionHours.set(JSON.stringify([row.sessionId, hour.toISOString()]), { sessionId: row.sessionId, hour });
      for (const d of (row.dimensions as Schemas['TelemetryDimension'][])) {
        const tag = { organizationId: row.organizationId, type: d.type, value: d.value, sessionId: row.sessionId };
        tags.set(JSON.stringify([tag.type, tag.value, tag.sessionId]), tag);
      }
    }
    const sessionKey = row.sessionId ?? '';
    const key = JSON.stringify([hour.toISOString(), row.memberId, sessionKey]);
    const delta =
      hourly.get(key) ??
      { organizationId: row.organizationId, hour, memberId: row.memberId, sessionKey, events: 0, tasksCompleted: 0, tasksFailed: 0, completedDurationSum: 0, completedDurationCount: 0 };
    delta.events += 1;
    if (row.type === 'task.completed' || row.type === 'task.failed') {
      const totals = daily.get(day) ?? { day, tasksCompleted: 0, tasksFailed: 0, completedDurationSum: 0, completedDurationCount: 0 };
      daily.set(day, totals);
      if (row.type === 'task.completed') {
        delta.tasksCompleted += 1;
        totals.tasksCompleted += 1;
        if (row.durationMs !== null) {
          delta.completedDurationSum += row.durationMs;
          delta.completedDurationCount += 1;
          totals.completedDurationSum += row.durationMs;
          totals.completedDurationCount += 1;
        }
      } else {
        delta.tasksFailed += 1;
        totals.tasksFailed += 1;
      }
    }
    hourly.set(key, delta);
  }
  // Sorted keys: concurrent batches touching the same rows lock them in the same order.
  const sortedValues = <T>(map: Map<string, T>) => [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  const org = membership.organizationId;

  await deps.db.transaction().execute(async (trx) => {
    await store.insertEvents(trx, org, membership.memberId, now, rows);
    await store.tagSessions(trx, sortedValues(tags));
    await store.addHourly(trx, org, sortedValues(hourly));
    await store.addSessionHours(trx, org, sortedValues(sessionHours));
    await store.addDailyMember(trx, org, membership.memberId, [...days].sort());
    await store.addDailyTotals(trx, org, sortedValues(daily));
    await store.addWeeklyKeys(trx, org, sortedValues(weeklyKeys));
  });
  return rows.length;
}

export interface AnalyticsQuery {
  dimensionType?: string;
  dimensionValue?: string;
}

/** interface-spec 4.8; the figures are defined in the UsageAnalytics schema of the contract. */
export async function usageAnalytics(deps: AppDeps, membership: Membership, query: AnalyticsQuery): Promise<Schemas['UsageAnalytics']> {
  const { dimensionType, dimensionValue } = query;
  if ((dimensionType === undefined) !== (dimensionValue === undefined)) {
    const missing = dimensionType === undefined ? 'dimensionType' : 'dimensionValue';
    throw Invalid.at(['query', missing], 'dimensionType and dimensionValue go together');
  }
  requireAdmin(membership);
  await requireFeature(deps.db, deps.settings, membership.organizationId, 'analytics');

  const range = analyticsRange(deps.clock.now(), membership.organizationId, dimensionType !== undefined ? { type: dimensionType, value: dimensionValue! } : null);
  const { db } = deps;
  // Unfiltered: from the summaries (cost nearly independent of the data size). Filtered: from the
  // hourly rollup joined with the session tags (the summaries are not kept per dimension).
  // One connection, serial plans: these queries read a few thousand index entries, where starting
  // parallel workers costs more (several ms) than the scan it would split.
  const { members, pendingInvites, windows, weeks } = await db.transaction().execute(async (trx) => {
    await sql`SET LOCAL max_parallel_workers_per_gather = 0`.execute(trx);
    return {
      members: await store.countMembers(trx, membership.organizationId),
      pendingInvites: await store.countPendingInvites(trx, membership.organizationId, range.now),
      windows: range.dimension ? await store.windowFigures(trx, range) : await store.summaryWindowFigures(trx, range),
      weeks: range.dimension ? await store.weeklyFigures(trx, range, range.firstWeek) : await store.summaryWeekFigures(trx, range),
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

/** Rolling windows end at now; weeks are ISO weeks (Monday 00:00 UTC), the 12th containing today. */
export function analyticsRange(now: Date, organizationId: string, dimension: store.AnalyticsRange['dimension']): store.AnalyticsRange {
  const start7 = new Date(now.getTime() - 7 * DAY_MS);
  const start30 = new Date(now.getTime() - 30 * DAY_MS);
  const currentWeek = startOfWeek(now);
  return {
    organizationId,
    now,
    hourStart: startOfHour(now),
    today: dayOf(now),
    start7,
    start7HourEnd: new Date(startOfHour(start7).getTime() + HOUR_MS),
    start30,
    start30HourEnd: new Date(startOfHour(start30).getTime() + HOUR_MS),
    firstWeek: dayOf(new Date(currentWeek.getTime() - 11 * 7 * DAY_MS)),
    currentWeek: dayOf(currentWeek),
    dimension,
  };
}

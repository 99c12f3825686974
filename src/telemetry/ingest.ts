import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import * as store from './ingest-store';
import * as dimensions from './dimension-store';
import { dayOf, startOfBucket, startOfHour, startOfWeek } from './time';

/**
 * What one batch of a member's events adds to each summary: the rollup rules, in one place.
 * Every list is distinct and sorted by its key, so concurrent batches touching the same rows lock
 * them in the same order.
 */
export interface IngestPlan {
  tags: store.SessionTag[];
  hourly: store.HourlyDelta[];
  buckets: store.BucketDelta[];
  sessionHours: { sessionId: string; hour: Date }[];
  days: string[];
  daily: store.DailyDelta[];
  weeklyKeys: store.WeeklyKey[];
}

const sortedValues = <T>(map: Map<string, T>): T[] =>
  [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);

/** The calendar keys of one UTC hour, computed once per hour a batch touches rather than per event. */
interface HourKeys {
  hour: Date;
  iso: string;
  day: string;
  week: string;
}

export function planIngest(rows: store.EventRow[]): IngestPlan {
  const tags = new Map<string, store.SessionTag>();
  const hourly = new Map<string, store.HourlyDelta>();
  const buckets = new Map<string, store.BucketDelta>();
  const sessionHours = new Map<string, { sessionId: string; hour: Date }>();
  const days = new Set<string>();
  const daily = new Map<string, store.DailyDelta>();
  const weeklyKeys = new Map<string, store.WeeklyKey>();
  const hours = new Map<number, HourKeys>();
  const keysOf = (at: Date): HourKeys => {
    const hour = startOfHour(at);
    let keys = hours.get(hour.getTime());
    if (!keys) {
      keys = { hour, iso: hour.toISOString(), day: dayOf(hour), week: dayOf(startOfWeek(hour)) };
      hours.set(hour.getTime(), keys);
    }
    return keys;
  };
  for (const row of rows) {
    const { hour, iso, day, week } = keysOf(row.occurredAt);
    days.add(day);
    weeklyKeys.set(`${week} m ${row.memberId}`, { week, kind: 'm', key: row.memberId });
    if (row.sessionId !== null) {
      weeklyKeys.set(`${week} s ${row.sessionId}`, { week, kind: 's', key: row.sessionId });
      sessionHours.set(`${row.sessionId}\u0000${iso}`, { sessionId: row.sessionId, hour });
      for (const d of row.dimensions as { type: string; value: string }[]) {
        const tag = { organizationId: row.organizationId, type: d.type, value: d.value, sessionId: row.sessionId };
        tags.set(JSON.stringify([tag.type, tag.value, tag.sessionId]), tag);
      }
    }
    const sessionKey = row.sessionId ?? '';
    const key = `${iso}\u0000${row.memberId}\u0000${sessionKey}`;
    const delta =
      hourly.get(key) ??
      { organizationId: row.organizationId, hour, memberId: row.memberId, sessionKey, events: 0, tasksCompleted: 0, tasksFailed: 0, completedDurationSum: 0, completedDurationCount: 0 };
    delta.events += 1;
    const bucket = startOfBucket(row.occurredAt);
    const bucketKey = `${bucket.getTime()}\u0000${row.memberId}\u0000${sessionKey}`;
    const fine = buckets.get(bucketKey) ?? { bucket, memberId: row.memberId, sessionKey, tasksCompleted: 0, tasksFailed: 0, completedDurationSum: 0, completedDurationCount: 0 };
    buckets.set(bucketKey, fine);
    if (row.type === 'task.completed' || row.type === 'task.failed') {
      const totals = daily.get(day) ?? { day, tasksCompleted: 0, tasksFailed: 0, completedDurationSum: 0, completedDurationCount: 0 };
      daily.set(day, totals);
      if (row.type === 'task.completed') {
        for (const c of [delta, totals, fine]) {
          c.tasksCompleted += 1;
          if (row.durationMs !== null) {
            c.completedDurationSum += row.durationMs;
            c.completedDurationCount += 1;
          }
        }
      } else {
        for (const c of [delta, totals, fine]) c.tasksFailed += 1;
      }
    }
    hourly.set(key, delta);
  }
  return {
    tags: sortedValues(tags),
    hourly: sortedValues(hourly),
    // Keys sort by bucket time as a number: fixed-width (13 digits) for every time this side of 2286.
    buckets: sortedValues(buckets),
    sessionHours: sortedValues(sessionHours),
    days: [...days].sort(),
    daily: sortedValues(daily),
    weeklyKeys: sortedValues(weeklyKeys),
  };
}

/**
 * Stores one member's batch and everything it adds to the rollup and the summaries in one
 * transaction: analytics never sees half a batch, and a database error fails the whole batch
 * instead of dropping events. The service and the benchmark's seeder both write through here.
 */
export async function writeBatch(db: Kysely<DB>, organizationId: string, memberId: string, receivedAt: Date, rows: store.EventRow[]): Promise<void> {
  const plan = planIngest(rows);
  const sessionIds = [...new Set(plan.sessionHours.map((p) => p.sessionId))];
  await db.transaction().execute(async (trx) => {
    await store.lockSessions(trx, organizationId, sessionIds);
    const newTags = await store.insertEventsAndTags(trx, organizationId, memberId, receivedAt, rows, plan.tags);
    // A session tagged now for the first time brings its earlier rollup rows to the tag's
    // summaries, read before this batch's rows are added to the rollup.
    await dimensions.addTagged(trx, organizationId, newTags, plan.hourly);
    await store.addRollups(trx, organizationId, plan.hourly, plan.buckets, plan.sessionHours);
    await dimensions.copyTaggedSessions(trx, organizationId, sessionIds);
    await store.addCalendar(trx, organizationId, memberId, plan.days, plan.daily, plan.weeklyKeys);
  });
}

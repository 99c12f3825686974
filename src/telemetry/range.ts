import { DAY_MS, HOUR_MS, dayOf, startOfHour, startOfWeek } from './time';

/** The instants and days analytics reads at one `now`; both query families (rollup, summaries) take it. */
export interface AnalyticsRange {
  organizationId: string;
  now: Date;
  /** Start of the current UTC hour, and today as `YYYY-MM-DD`. */
  hourStart: Date;
  today: string;
  /** Window starts (exclusive) and the end of the hour each falls in. */
  start7: Date;
  start7HourEnd: Date;
  start30: Date;
  start30HourEnd: Date;
  /** Monday (`YYYY-MM-DD`) of the oldest of the 12 weeks, and of the current one. */
  firstWeek: string;
  currentWeek: string;
  dimension: { type: string; value: string } | null;
}

export interface WindowFigures {
  active7: number;
  active30: number;
  sessions7: number;
  sessions30: number;
  completed7: number;
  failed7: number;
  completed30: number;
  failed30: number;
  durationSum30: number;
  durationCount30: number;
}

export interface WeekFigures {
  week: number;
  activeMembers: number;
  sessions: number;
  tasksCompleted: number;
  tasksFailed: number;
}

/** Rolling windows end at now; weeks are ISO weeks (Monday 00:00 UTC), the 12th containing today. */
export function analyticsRange(now: Date, organizationId: string, dimension: AnalyticsRange['dimension']): AnalyticsRange {
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

/** A row of numeric columns (Postgres returns bigint sums as strings) as numbers, null as 0. */
export function numbers<K extends string>(row: Record<K, string | number | null>): Record<K, number> {
  const out = {} as Record<K, number>;
  for (const key of Object.keys(row) as K[]) out[key] = Number(row[key] ?? 0);
  return out;
}

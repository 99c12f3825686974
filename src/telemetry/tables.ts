import type { ColumnType } from 'kysely';
import type { Json, Timestamp } from '../db/columns';

/** A `date` column, written as `YYYY-MM-DD`; drivers differ in what they read (select `day::text` to compare). */
export type DayColumn = ColumnType<Date | string, string, string>;

export interface TelemetryEventsTable {
  id: string;
  organization_id: string;
  member_id: string;
  type: string;
  occurred_at: Timestamp;
  received_at: Timestamp;
  session_id: string | null;
  duration_ms: number | null;
  success: boolean | null;
  dimensions: Json<unknown[]>;
}

export interface TelemetrySessionDimensionsTable {
  organization_id: string;
  type: string;
  value: string;
  session_id: string;
}

export interface TelemetryHourlySessionsTable {
  organization_id: string;
  /** Start of the UTC hour. */
  hour: Timestamp;
  member_id: string;
  session_key: string;
  events: number;
  tasks_completed: number;
  tasks_failed: number;
  /** int8: read as a string by both drivers. */
  completed_duration_sum: ColumnType<string, number | string, number | string>;
  completed_duration_count: number;
}

/** The same counts per 5-minute bucket (migration 20261124_1000), for the partial hours at a window's edges. */
export interface TelemetryFiveMinuteSessionsTable {
  organization_id: string;
  /** Start of the 5-minute bucket (UTC). */
  bucket: Timestamp;
  member_id: string;
  session_key: string;
  tasks_completed: number;
  tasks_failed: number;
  completed_duration_sum: ColumnType<string, number | string, number | string>;
  completed_duration_count: number;
}

export interface TelemetryWeeklyKeysTable {
  organization_id: string;
  week: DayColumn;
  kind: 'm' | 's';
  key: string;
}

export interface TelemetrySessionsTable {
  organization_id: string;
  session_id: string;
  /** Latest UTC hour with an event of the session (future-stamped events included). */
  last_hour: Timestamp;
  /** Every UTC hour with an event of the session, sorted. */
  hours: ColumnType<Date[] | string, string, string>;
}

export interface TelemetryDailyMembersTable {
  organization_id: string;
  day: DayColumn;
  member_id: string;
}

export interface TelemetryDailyTotalsTable {
  organization_id: string;
  day: DayColumn;
  shard: number;
  tasks_completed: number;
  tasks_failed: number;
  completed_duration_sum: ColumnType<string, number | string, number | string>;
  completed_duration_count: number;
}

export interface TelemetryWeeklyCountsTable {
  organization_id: string;
  week: DayColumn;
  shard: number;
  active_members: number;
  sessions: number;
}

/** The summaries above kept per session dimension (migration 20261124_0250, ./dimension-store.ts). */
interface DimensionKey {
  organization_id: string;
  dim_type: string;
  dim_value: string;
}
export type TelemetryDimensionSessionsTable = DimensionKey & Omit<TelemetrySessionsTable, 'organization_id'>;
export type TelemetryDimensionDailyMembersTable = DimensionKey & Omit<TelemetryDailyMembersTable, 'organization_id'>;
export type TelemetryDimensionDailyTotalsTable = DimensionKey & Omit<TelemetryDailyTotalsTable, 'organization_id'>;
export type TelemetryDimensionWeeklyKeysTable = DimensionKey & Omit<TelemetryWeeklyKeysTable, 'organization_id'>;
export type TelemetryDimensionWeeklyCountsTable = DimensionKey & Omit<TelemetryWeeklyCountsTable, 'organization_id'>;
/** The hourly rollup per dimension and member, without the session key (migration 20261124_0900). */
export type TelemetryDimensionHourlyTable = DimensionKey & Omit<TelemetryHourlySessionsTable, 'organization_id' | 'session_key' | 'events'>;

export interface TelemetryTables {
  telemetry_events: TelemetryEventsTable;
  telemetry_session_dimensions: TelemetrySessionDimensionsTable;
  telemetry_hourly_sessions: TelemetryHourlySessionsTable;
  telemetry_five_minute_sessions: TelemetryFiveMinuteSessionsTable;
  telemetry_weekly_keys: TelemetryWeeklyKeysTable;
  telemetry_sessions: TelemetrySessionsTable;
  telemetry_daily_members: TelemetryDailyMembersTable;
  telemetry_daily_totals: TelemetryDailyTotalsTable;
  telemetry_weekly_counts: TelemetryWeeklyCountsTable;
  telemetry_dimension_sessions: TelemetryDimensionSessionsTable;
  telemetry_dimension_daily_members: TelemetryDimensionDailyMembersTable;
  telemetry_dimension_daily_totals: TelemetryDimensionDailyTotalsTable;
  telemetry_dimension_weekly_keys: TelemetryDimensionWeeklyKeysTable;
  telemetry_dimension_weekly_counts: TelemetryDimensionWeeklyCountsTable;
  telemetry_dimension_hourly: TelemetryDimensionHourlyTable;
}

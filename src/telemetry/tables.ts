import type { ColumnType } from 'kysely';
import type { Json, Timestamp } from '../db/schema';

/** A `date` column, written and read as `YYYY-MM-DD` text so both drivers agree. */
export type DayColumn = ColumnType<string, string, string>;

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

export interface TelemetryDailySessionsTable {
  organization_id: string;
  day: DayColumn;
  member_id: string;
  session_key: string;
  events: number;
  tasks_completed: number;
  tasks_failed: number;
  /** int8: read as a string by both drivers. */
  completed_duration_sum: ColumnType<string, number | string, number | string>;
  completed_duration_count: number;
}

export interface TelemetryTables {
  telemetry_events: TelemetryEventsTable;
  telemetry_session_dimensions: TelemetrySessionDimensionsTable;
  telemetry_daily_sessions: TelemetryDailySessionsTable;
}

import type { ColumnType } from 'kysely';

/**
 * Column types shared by every area's table interfaces. They live apart from schema.ts so table
 * files never import the schema that composes them (no cycle).
 */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type Json<T = unknown> = ColumnType<T, string, string>;

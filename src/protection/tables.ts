import type { Timestamp } from '../db/columns';

/** Fixed-window counters shared by every service process (state lives in Postgres, not memory). */
export interface RateLimitsTable {
  key: string;
  points: number;
  expires_at: Timestamp;
}

export interface ProtectionTables {
  rate_limits: RateLimitsTable;
}

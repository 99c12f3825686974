import type { Logger } from 'pino';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { Cursors } from '../lib/pagination';
import type { SecretBox } from '../lib/crypto';
import type { Settings } from '../settings';
import type { Outbound } from '../outbound';
import type { AuditContext } from './audit-context';

/** Everything a service may use, injected once by createApp (tests pass their own clock and fetch). */
export interface AppDeps {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  /** Trusted URLs only (settings); tenant-supplied URLs go through `outbound` (src/outbound). */
  fetch: typeof fetch;
  outbound: Outbound;
  settings: Settings;
  cursors: Cursors;
  secrets: SecretBox;
  /** The request's audit context (set per request by the router); null in the app's own bag, where there is no request. */
  audit: AuditContext | null;
}

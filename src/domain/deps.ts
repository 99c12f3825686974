import type { Logger } from 'pino';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { Cursors } from '../lib/pagination';
import type { SecretBox } from '../lib/crypto';
import type { Settings } from '../settings';
import type { Outbound } from '../outbound';

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
}

import type { Db } from '../db/schema';
import type { Upkeep } from '../jobs/runner';
import { pruneExpiredRecords } from './records';
import { pruneRegisteredClients } from './registered-clients';

const BATCH = 5000;

/**
 * What the authorization server leaves behind (docs/oauth.md#storage): the library's records past
 * their expiry (codes, refresh tokens, interactions, device codes, revoked access tokens' ids) and
 * registered clients unused for 30 days. Neither is ever answered once expired, so removing them
 * only keeps the tables from growing; a record goes in batches, so no statement holds many rows.
 */
export function oauthUpkeep(db: Db): Upkeep {
  return {
    name: 'oauth',
    async maintain(now) {
      let touched = await pruneRegisteredClients(db, now);
      for (;;) {
        const n = await pruneExpiredRecords(db, now, BATCH);
        touched += n;
        if (n < BATCH) return touched;
      }
    },
  };
}

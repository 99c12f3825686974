import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { reassignRole } from './connection-store';

/** Called by role deletion (src/roles) inside its transaction: connections giving the role give `toKey`. */
export async function reassignConnectionRole(trx: Transaction<DB>, organizationId: string, fromKey: string, toKey: string, now: Date): Promise<void> {
  await reassignRole(trx, organizationId, fromKey, toKey, now);
}

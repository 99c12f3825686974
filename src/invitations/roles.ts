import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import * as store from './store';

/** Called by role deletion (src/roles) inside its transaction: invitations naming the role move to `toKey`. */
export async function reassignInvitationRole(trx: Transaction<DB>, organizationId: string, fromKey: string, toKey: string): Promise<void> {
  await store.reassignRole(trx, organizationId, fromKey, toKey);
}

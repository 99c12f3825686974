import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import { provisionBuiltinPlugins } from '../plugins/builtin';

export interface NewOrganization {
  organizationId: string;
  ownerMemberId: string;
  now: Date;
}

/**
 * What every new organization starts with, written in the creating transaction. Areas that own
 * such defaults (the built-in marketplace and its plugins) add a step here, so organization
 * creation stays the one place that decides what a new organization holds.
 */
type Provisioner = (trx: Transaction<DB>, org: NewOrganization) => Promise<void>;

const provisioners: Provisioner[] = [provisionBuiltinPlugins];

export async function provisionOrganization(trx: Transaction<DB>, org: NewOrganization): Promise<void> {
  for (const provision of provisioners) await provision(trx, org);
}

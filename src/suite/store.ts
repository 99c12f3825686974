import type { Db } from '../db/schema';

export interface SuiteClientRow {
  tenant_id: string;
  client_id: string;
  client_secret_sealed: string;
  features: string;
  updated_at: Date;
}

export async function findClient(db: Db, organizationId: string): Promise<SuiteClientRow | undefined> {
  return db
    .selectFrom('suite_oauth_clients')
    .select(['tenant_id', 'client_id', 'client_secret_sealed', 'features', 'updated_at'])
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
}

export async function upsertClient(
  db: Db,
  client: { organizationId: string; tenantId: string; clientId: string; clientSecretSealed: string; features: string; memberId: string; now: Date },
): Promise<SuiteClientRow> {
  return db
    .insertInto('suite_oauth_clients')
    .values({
      organization_id: client.organizationId,
      tenant_id: client.tenantId,
      client_id: client.clientId,
      client_secret_sealed: client.clientSecretSealed,
      features: client.features,
      updated_by_member_id: client.memberId,
      created_at: client.now,
      updated_at: client.now,
    })
    .onConflict((oc) =>
      oc.column('organization_id').doUpdateSet({
        tenant_id: client.tenantId,
        client_id: client.clientId,
        client_secret_sealed: client.clientSecretSealed,
        features: client.features,
        updated_by_member_id: client.memberId,
        updated_at: client.now,
      }),
    )
    .returning(['tenant_id', 'client_id', 'client_secret_sealed', 'features', 'updated_at'])
    .executeTakeFirstOrThrow();
}

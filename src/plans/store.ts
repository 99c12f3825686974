import { sql, type Transaction } from 'kysely';
import type { DB, Db } from '../db/schema';

export interface PlanRow {
  key: string;
  max_members: number | null;
  max_workers: number | null;
  max_llm_providers: number | null;
  max_service_accounts: number | null;
  features: Record<string, boolean>;
}

const PLAN_COLUMNS = ['p.key', 'p.max_members', 'p.max_workers', 'p.max_llm_providers', 'p.max_service_accounts', 'p.features'] as const;

export async function findOrganizationPlan(db: Db, organizationId: string): Promise<PlanRow | undefined> {
  return db
    .selectFrom('organizations as o')
    .innerJoin('plans as p', 'p.key', 'o.plan')
    .select(PLAN_COLUMNS)
    .where('o.id', '=', organizationId)
    .executeTakeFirst();
}

/**
 * The organization's plan, locking the organization row until the transaction ends. `FOR NO KEY
 * UPDATE` serialises limit checks of one organization against each other, while inserts that only
 * reference the organization (FOR KEY SHARE: telemetry, heartbeats) go on unblocked.
 */
export async function lockOrganizationPlan(trx: Transaction<DB>, organizationId: string): Promise<PlanRow | undefined> {
  return trx
    .selectFrom('organizations as o')
    .innerJoin('plans as p', 'p.key', 'o.plan')
    .select(PLAN_COLUMNS)
    .where('o.id', '=', organizationId)
    .forNoKeyUpdate('o')
    .executeTakeFirst();
}

/** Stopped workers count: a stopped worker still holds its registration and can be started again. */
export async function countWorkers(db: Db, organizationId: string): Promise<number> {
  const row = await db
    .selectFrom('workers')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * LLM providers live in the resources area's `llm_providers` table (organization_id column). Until
 * that table exists there is nothing to count; the guard costs one catalogue lookup.
 */
export async function countLlmProviders(db: Db, organizationId: string): Promise<number> {
  const exists = await sql<{ t: string | null }>`SELECT to_regclass('llm_providers')::text AS t`.execute(db);
  if (!exists.rows[0]?.t) return 0;
  const row = await sql<{ n: string }>`SELECT count(*) AS n FROM llm_providers WHERE organization_id = ${organizationId}`.execute(db);
  return Number(row.rows[0]?.n ?? 0);
}

/**
 * Plans, limits and features (docs/workers-and-usage.md#plans-limits-and-usage). Every path that creates a counted thing calls
 * `enforceLimit` INSIDE its creating transaction, before the insert:
 *
 *   await deps.db.transaction().execute(async (trx) => {
 *     await enforceLimit(trx, deps.settings, organizationId, 'llmProviders');
 *     await insertLlmProvider(trx, ...);
 *   });
 *
 * It locks the organization row (FOR NO KEY UPDATE) and then counts, so two requests at the limit
 * cannot both pass; a refusal throws 402 `plan_limit_reached` with `limit`, and the transaction
 * rolls back (nothing written). Counted: `members` (people: invitation accept here; SCIM create and
 * SSO just-in-time by their areas), `workers` (stopped ones too), `llmProviders` (resources area),
 * `serviceAccounts` (src/service-accounts; they are members but take no seat).
 * Features: `requireFeature(db, settings, organizationId, 'scim' | 'sso' | 'auditLog' | 'analytics')`
 * → 402 `enterprise_plan_required` with `feature`. `PLAN_GATING=off` lifts both. Lowering a plan
 * removes nothing: only new creations are refused.
 */
import type { Transaction } from 'kysely';
import type { DB, Db } from '../db/schema';
import type { Settings } from '../settings';
import { CodedError, NotFound } from '../lib/errors';
import { countActiveMembers, countServiceAccounts } from '../members/memberships';
import * as store from './store';
import type { PlanRow } from './store';

export type LimitName = 'members' | 'workers' | 'llmProviders' | 'serviceAccounts';
export type FeatureName = 'analytics' | 'sso' | 'scim' | 'auditLog';
export const LIMIT_NAMES: readonly LimitName[] = ['members', 'workers', 'llmProviders', 'serviceAccounts'];
export const FEATURE_NAMES: readonly FeatureName[] = ['analytics', 'sso', 'scim', 'auditLog'];

type Gating = Pick<Settings, 'planGating'>;

const LIMIT_WORDS: Record<LimitName, string> = { members: 'members', workers: 'workers', llmProviders: 'LLM providers', serviceAccounts: 'service accounts' };
const FEATURE_WORDS: Record<FeatureName, string> = { analytics: 'Usage analytics', sso: 'Single sign-on', scim: 'SCIM provisioning', auditLog: 'The audit log' };

export class PlanLimitReached extends CodedError<402> {
  constructor(readonly limit: LimitName, max: number, plan: string) {
    super(402, 'plan_limit_reached', `The ${plan} plan allows at most ${max} ${LIMIT_WORDS[limit]}; upgrade the plan to add more.`, { limit });
  }
}

export class FeatureNotInPlan extends CodedError<402> {
  constructor(readonly feature: FeatureName) {
    super(402, 'enterprise_plan_required', `${FEATURE_WORDS[feature]} is not part of the organization's plan.`, { feature });
  }
}

export interface PlanInfo {
  plan: string;
  limits: Record<LimitName, number | null>;
  features: Record<FeatureName, boolean>;
}

export function toPlanInfo(row: PlanRow): PlanInfo {
  return {
    plan: row.key,
    limits: { members: row.max_members, workers: row.max_workers, llmProviders: row.max_llm_providers, serviceAccounts: row.max_service_accounts },
    features: Object.fromEntries(FEATURE_NAMES.map((f) => [f, row.features[f] === true])) as Record<FeatureName, boolean>,
  };
}

const organizationNotFound = () => new NotFound('organization_not_found', 'The organization could not be found.');

const COUNTERS: Record<LimitName, (db: Db, organizationId: string) => Promise<number>> = {
  members: countActiveMembers,
  workers: store.countWorkers,
  llmProviders: store.countLlmProviders,
  serviceAccounts: countServiceAccounts,
};

export async function planOf(db: Db, organizationId: string): Promise<PlanInfo> {
  const row = await store.findOrganizationPlan(db, organizationId);
  if (!row) throw organizationNotFound();
  return toPlanInfo(row);
}

/** Current counts of everything a plan limits. */
export async function usageOf(db: Db, organizationId: string): Promise<Record<LimitName, number>> {
  const [members, workers, llmProviders, serviceAccounts] = await Promise.all(LIMIT_NAMES.map((l) => COUNTERS[l](db, organizationId)));
  return { members: members!, workers: workers!, llmProviders: llmProviders!, serviceAccounts: serviceAccounts! };
}

/**
 * Refuses one more `limit` when the organization is at its plan's limit. Must run inside the
 * transaction that then creates the thing (the type asks for a transaction): the organization row
 * stays locked until that transaction ends, so the count cannot go stale before the insert.
 */
export async function enforceLimit(trx: Transaction<DB>, settings: Gating, organizationId: string, limit: LimitName): Promise<void> {
  if (!settings.planGating) return;
  const row = await store.lockOrganizationPlan(trx, organizationId);
  if (!row) throw organizationNotFound();
  const max = toPlanInfo(row).limits[limit];
  if (max === null) return;
  if ((await COUNTERS[limit](trx, organizationId)) >= max) throw new PlanLimitReached(limit, max, row.key);
}

/** 402 `enterprise_plan_required` unless the organization's plan has the feature. */
export async function requireFeature(db: Db, settings: Gating, organizationId: string, feature: FeatureName): Promise<void> {
  if (!settings.planGating) return;
  const plan = await planOf(db, organizationId);
  if (!plan.features[feature]) throw new FeatureNotInPlan(feature);
}

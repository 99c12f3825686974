import type { Db } from '../db/schema';
import type { Settings } from '../settings';

/**
 * Whether the organization's plan has the `scim` feature (org-resources §5: enterprise only;
 * PLAN_GATING=off lifts it). The one place SCIM asks; it reads the plan column until the plans
 * module (features and limits as data) is on main, then it asks that module instead.
 */
export async function hasScimFeature(db: Db, settings: Settings, organizationId: string): Promise<boolean> {
  if (!settings.planGating) return true;
  const row = await db.selectFrom('organizations').select('plan').where('id', '=', organizationId).executeTakeFirst();
  return row?.plan === 'enterprise';
}

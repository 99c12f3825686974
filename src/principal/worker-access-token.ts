import type { Db } from '../db/schema';
import type { Principal } from '../domain/principal';
import { preparedAs } from '../db/connect';
import { permissionsOfRole } from '../access/role-permissions';
import type { AccessTokenClaims } from '../oauth/verify';
import { revokedKeyOf } from '../oauth/revocations';
import { organizationUnlocked } from './organization-lock';
import { accessTokenPrincipal } from './token-principal';

/**
 * A worker's own client-credentials token (`sub` = `client_id` = the worker,
 * docs/workers-and-usage.md#workers-as-oauth-clients) → a principal, in one statement: the worker
 * still there and not stopped, its creator still an active member, the token not revoked, the
 * organization not locked. The worker has no member of its own; it acts with its creator's
 * membership, and may do its scope ∩ its ceiling now ∩ its creator's permissions now.
 */
export async function principalOfWorkerToken(db: Db, claims: AccessTokenClaims): Promise<Principal | null> {
  if (claims.client_id !== claims.sub || claims.authorization_id !== undefined || claims.act !== undefined) return null;
  const row = await db
    .selectFrom('workers as w')
    .modifyFront(preparedAs('worker_access_token_principal'))
    .innerJoin('members as m', 'm.id', 'w.created_by_member_id')
    .leftJoin('organization_roles as r', (join) => join.onRef('r.organization_id', '=', 'm.organization_id').onRef('r.key', '=', 'm.role'))
    .select(['w.organization_id as organizationId', 'w.ceiling as ceiling', 'm.id as creatorMemberId', 'm.role as role', 'r.built_in as roleBuiltIn', 'r.permissions as rolePermissions'])
    .where('w.id', '=', claims.sub)
    .where('w.organization_id', '=', claims.org_id)
    .where('w.stopped_at', 'is', null)
    .where('m.removed_at', 'is', null)
    .where('m.suspended_at', 'is', null)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('oauth_records as x').select('x.id').where('x.id', '=', revokedKeyOf(claims.jti)))))
    .where(organizationUnlocked('w.organization_id'))
    .executeTakeFirst();
  if (!row) return null;
  const creator = permissionsOfRole({ key: row.role, builtIn: row.roleBuiltIn ?? false, permissions: row.rolePermissions });
  const ceiling = new Set(row.ceiling);
  const permissions = new Set(claims.scope.filter((key) => ceiling.has(key) && creator.has(key)));
  const principal = accessTokenPrincipal({ userId: null, serviceAccountId: null, clientId: claims.client_id, organizationId: row.organizationId, memberId: row.creatorMemberId, role: row.role, permissions });
  return { ...principal, membership: { ...principal.membership!, borrowed: true }, worker: { id: claims.sub, delegated: false } };
}

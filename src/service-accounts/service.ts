import type { Transaction } from 'kysely';
import type { components } from '../../generated/api';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { positioned, type PageRequest } from '../lib/pagination';
import { isForeignKeyViolation } from '../db/errors';
import { assignableRole, requireMayActOnMember } from '../roles/service';
import { addServiceAccountMember } from '../members/memberships';
import { removeInTransaction } from '../members/service';
import { enforceLimit } from '../plans';
import { changed, created, deleted, recordChange } from '../audit';
import * as store from './store';
import type { ServiceAccountRow } from './store';

/**
 * Service accounts (docs/service-accounts.md): members of the organization with no user, made by
 * an admin, acting with their member's role through their own credentials (client secrets,
 * ./secrets.ts; API keys, src/api-keys). A service account is deleted by ending its member.
 */
export {
  verifyServiceAccountSecret,
  serviceAccountAsClient,
  serviceAccountState,
  recordServiceAccountUse,
  type ServiceAccountAsClient,
  type VerifiedServiceAccount,
  type ServiceAccountState,
} from './credentials';

type ServiceAccount = components['schemas']['ServiceAccount'];

export const serviceAccountNotFound = () => new NotFound('service_account_not_found', 'The service account could not be found.');

export function toServiceAccount(row: ServiceAccountRow): ServiceAccount {
  return {
    id: row.id,
    memberId: row.member_id,
    name: row.name,
    description: row.description,
    role: row.role,
    disabled: row.disabled_at !== null,
    createdAt: row.created_at.toISOString(),
    createdBy: { memberId: row.created_by_member_id },
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

/**
 * A service account the caller may change, its row locked until the transaction ends: 404 for
 * none in the organization (another's included), 403 `member_permissions_not_held` when it holds
 * permissions the caller lacks (nobody acts on, or takes credentials of, more than they hold).
 */
export async function lockForChange(trx: Transaction<DB>, membership: Membership, id: string): Promise<ServiceAccountRow> {
  const row = await store.lockServiceAccount(trx, membership.organizationId, id);
  if (!row) throw serviceAccountNotFound();
  await requireMayActOnMember(trx, membership.permissions, membership.organizationId, row.member_id);
  return row;
}

/**
 * POST /v1/service-accounts: its member (the role any of the organization's but owner, whose
 * permissions the caller holds) and the account, counted against the plan's `serviceAccounts`
 * limit inside the same transaction.
 */
export async function createServiceAccount(deps: AppDeps, membership: Membership, input: { name: string; description?: string; role: string }): Promise<ServiceAccount> {
  const { organizationId } = membership;
  const now = deps.clock.now();
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const role = await assignableRole(trx, membership, input.role, ['body', 'role']);
      await enforceLimit(trx, deps.settings, organizationId, 'serviceAccounts');
      const memberId = await addServiceAccountMember(trx, { organizationId, role, now });
      const id = newId('serviceAccount');
      const description = input.description ?? null;
      await store.insertServiceAccount(trx, { id, organizationId, memberId, name: input.name, description, createdByMemberId: membership.memberId, now });
      await recordChange(trx, deps.audit, {
        action: 'service_account.created',
        target: { type: 'service_account', id },
        changes: created({ name: input.name, description, role, memberId }),
      });
      return toServiceAccount({ id, member_id: memberId, name: input.name, description, role, disabled_at: null, created_by_member_id: membership.memberId, created_at: now, last_used_at: null });
    });
  } catch (err) {
    // The role was deleted between the check and the insert.
    if (isForeignKeyViolation(err)) throw Invalid.at(['body', 'role'], `the organization has no role ${input.role}`);
    throw err;
  }
}

export async function getServiceAccount(deps: AppDeps, membership: Membership, id: string): Promise<ServiceAccount> {
  const row = await store.findServiceAccount(deps.db, membership.organizationId, id);
  if (!row) throw serviceAccountNotFound();
  return toServiceAccount(row);
}

export async function listServiceAccounts(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'service-accounts',
    page,
    async (after, take) => positioned(await store.listServiceAccounts(deps.db, membership.organizationId, after, take)),
    (row) => toServiceAccount(row),
  );
}

/**
 * PATCH: name, description, disabled. Disabling takes effect on the next request of any of its
 * credentials (each checks `disabled_at`); enabling brings them back. Audited as
 * `service_account.disabled` / `.enabled` when that changes, else `service_account.updated`.
 */
export async function updateServiceAccount(
  deps: AppDeps,
  membership: Membership,
  id: string,
  input: { name?: string; description?: string | null; disabled?: boolean },
): Promise<ServiceAccount> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const before = await lockForChange(trx, membership, id);
    const wasDisabled = before.disabled_at !== null;
    const disabledAt = input.disabled === undefined || input.disabled === wasDisabled ? undefined : input.disabled ? now : null;
    await store.updateServiceAccount(trx, membership.organizationId, id, { name: input.name, description: input.description, disabledAt }, now);
    const after: ServiceAccountRow = {
      ...before,
      name: input.name ?? before.name,
      description: input.description !== undefined ? input.description : before.description,
      disabled_at: disabledAt !== undefined ? disabledAt : before.disabled_at,
    };
    const action = disabledAt === undefined ? 'service_account.updated' : disabledAt ? 'service_account.disabled' : 'service_account.enabled';
    await recordChange(trx, deps.audit, {
      action,
      target: { type: 'service_account', id },
      changes: changed(
        { name: before.name, description: before.description, disabled: wasDisabled },
        { name: after.name, description: after.description, disabled: after.disabled_at !== null },
      ),
    });
    return toServiceAccount(after);
  });
}

/**
 * DELETE: its member ends as a removed member does (its API keys are revoked, it leaves its teams,
 * grants to it stop counting) and its secrets are deleted, so every credential of it answers 401
 * from the next request. The account's row stays, as its member's does, for the records that name it.
 */
export async function deleteServiceAccount(deps: AppDeps, membership: Membership, id: string): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const row = await lockForChange(trx, membership, id);
    await store.deleteSecretsOf(trx, membership.organizationId, id);
    if (!(await removeInTransaction(trx, membership.organizationId, row.member_id, now))) throw serviceAccountNotFound();
    await recordChange(trx, deps.audit, {
      action: 'service_account.deleted',
      target: { type: 'service_account', id },
      changes: deleted({ name: row.name, memberId: row.member_id }),
    });
  });
}

/** An account taken over: the service accounts its members created lose every credential (src/account/takeover.ts). */
export const endCredentialsOfAccountsCreatedByUser = store.endCredentialsOfAccountsCreatedByUser;

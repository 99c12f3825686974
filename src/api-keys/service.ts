import { positioned } from '../lib/pagination';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { randomSecret, sha256Hex } from '../lib/crypto';
import type { PageRequest } from '../lib/pagination';
import { requireFreshSession, requireHeld, requireKnownPermissions } from '../access/role-permissions';
import * as store from './store';
import type { ApiKeyRow } from './store';
import { created, recordChange } from '../audit';

const KEY_PREFIX = 'cpk';
/** Enough of the key to recognise it in a list, far too little to guess the rest. */
const VISIBLE_PREFIX_LENGTH = 12;

export function toApiKey(row: ApiKeyRow): components['schemas']['ApiKey'] {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    memberId: row.member_id,
    permissions: row.permissions,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at?.toISOString() ?? null,
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

/**
 * A key acts as the creating member with that member's current role (src/principal/api-key.ts),
 * narrowed by its `permissions` scope, which may name only permissions the creator holds.
 */
export async function createApiKey(
  deps: AppDeps,
  principal: Principal,
  membership: Membership,
  input: { name: string; expiresAt?: string; permissions?: string[] },
) {
  const now = deps.clock.now();
  requireFreshSession(principal, now, deps.settings.freshSessionMaxAgeMs);
  if (input.permissions) {
    requireKnownPermissions(input.permissions, ['body', 'permissions']);
    requireHeld(membership, input.permissions);
  }
  const expiresAt = input.expiresAt === undefined ? null : new Date(input.expiresAt);
  if (expiresAt && !(expiresAt.getTime() > now.getTime())) throw Invalid.at(['body', 'expiresAt'], 'must be in the future');
  const key = randomSecret(KEY_PREFIX);
  const row = await deps.db.transaction().execute(async (trx) => {
    const inserted = await store.insertApiKey(trx, {
      id: newId('apiKey'),
      organizationId: membership.organizationId,
      memberId: membership.memberId,
      name: input.name,
      prefix: key.slice(0, VISIBLE_PREFIX_LENGTH),
      keyHash: sha256Hex(key),
      now,
      expiresAt,
      permissions: input.permissions ?? null,
    });
    await recordChange(trx, deps.audit, {
      action: 'api_key.created',
      target: { type: 'api_key', id: inserted.id },
      changes: created({ name: input.name, prefix: inserted.prefix, expiresAt, key }),
    });
    return inserted;
  });
  return { item: toApiKey(row), key };
}

export async function listApiKeys(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'api-keys',
    page,
    async (after, take) => positioned(await store.listApiKeys(deps.db, membership.organizationId, after, take)),
    (row) => toApiKey(row),
  );
}

export async function revokeApiKey(deps: AppDeps, membership: Membership, apiKeyId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.revokeApiKey(trx, membership.organizationId, apiKeyId, deps.clock.now()))) {
      throw new NotFound('api_key_not_found', 'The API key could not be found.');
    }
    await recordChange(trx, deps.audit, { action: 'api_key.revoked', target: { type: 'api_key', id: apiKeyId } });
  });
}

/** A removed or suspended member's keys stop working for good (called inside that change's transaction). */
export const revokeKeysOfMember = store.revokeApiKeysOf;

/** Every live key of the user, in every organization, stops working (called inside that change's transaction). */
export const revokeKeysOfUser = store.revokeApiKeysOfUser;

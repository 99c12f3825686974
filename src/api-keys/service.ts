import type { Transaction } from 'kysely';
import { positioned } from '../lib/pagination';
import type { components } from '../../generated/api';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { AuditContext } from '../domain/audit-context';
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

type ApiKey = components['schemas']['ApiKey'];

export function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    memberId: row.member_id,
    owner: row.service_account_id === null ? { type: 'member', memberId: row.member_id } : { type: 'service_account', serviceAccountId: row.service_account_id },
    permissions: row.permissions,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at?.toISOString() ?? null,
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

/** What a new key's request asks for. */
export interface NewKeyInput {
  name: string;
  expiresAt?: string;
  permissions?: string[];
}

/**
 * The checks every new key passes before its transaction: a recent sign-in (creating a credential
 * is session only and fresh), known permission keys the caller holds (no escalation through a
 * scope), a future expiry.
 */
export function checkNewKey(principal: Principal, membership: Membership, input: NewKeyInput, now: Date, freshSessionMaxAgeMs: number): Date | null {
  requireFreshSession(principal, now, freshSessionMaxAgeMs);
  if (input.permissions) {
    requireKnownPermissions(input.permissions, ['body', 'permissions']);
    requireHeld(membership, input.permissions);
  }
  const expiresAt = input.expiresAt === undefined ? null : new Date(input.expiresAt);
  if (expiresAt && !(expiresAt.getTime() > now.getTime())) throw Invalid.at(['body', 'expiresAt'], 'must be in the future');
  return expiresAt;
}

/**
 * Writes a key acting as `memberId` (the caller's own member, or a service account's: then
 * `serviceAccountId`), audited in `trx`. The key is in the answer only; its SHA-256 is stored.
 */
export async function issueApiKey(
  trx: Transaction<DB>,
  audit: AuditContext | null,
  input: { organizationId: string; memberId: string; serviceAccountId: string | null; name: string; expiresAt: Date | null; permissions: string[] | null; now: Date },
): Promise<{ item: ApiKey; key: string }> {
  const key = randomSecret(KEY_PREFIX);
  const inserted = await store.insertApiKey(trx, {
    id: newId('apiKey'),
    organizationId: input.organizationId,
    memberId: input.memberId,
    name: input.name,
    prefix: key.slice(0, VISIBLE_PREFIX_LENGTH),
    keyHash: sha256Hex(key),
    now: input.now,
    expiresAt: input.expiresAt,
    permissions: input.permissions,
  });
  const owner = input.serviceAccountId === null ? {} : { serviceAccountId: input.serviceAccountId };
  await recordChange(trx, audit, {
    action: 'api_key.created',
    target: { type: 'api_key', id: inserted.id },
    changes: created({ name: input.name, prefix: inserted.prefix, expiresAt: input.expiresAt, ...owner, key }),
  });
  return { item: toApiKey({ ...inserted, service_account_id: input.serviceAccountId }), key };
}

/**
 * POST /v1/api-keys: a key acting as the creating member with that member's current role
 * (src/principal/api-key.ts), narrowed by its `permissions` scope. It ends with the member.
 */
export async function createApiKey(deps: AppDeps, principal: Principal, membership: Membership, input: NewKeyInput) {
  const now = deps.clock.now();
  const expiresAt = checkNewKey(principal, membership, input, now, deps.settings.freshSessionMaxAgeMs);
  return deps.db.transaction().execute((trx) =>
    issueApiKey(trx, deps.audit, {
      organizationId: membership.organizationId,
      memberId: membership.memberId,
      serviceAccountId: null,
      name: input.name,
      expiresAt,
      permissions: input.permissions ?? null,
      now,
    }),
  );
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

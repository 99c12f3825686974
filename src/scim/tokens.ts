import { positioned } from '../lib/pagination';
import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { randomSecret, sha256Hex } from '../lib/crypto';
import type { PageRequest } from '../lib/pagination';
import { requireFreshSession } from '../access/role-permissions';
import { requireFeature } from '../plans';
import { created, recordChange } from '../audit';
import * as store from './token-store';
import type { ScimTokenRow } from './token-store';

const TOKEN_PREFIX = 'cpscim';
/** Enough of the token to recognise it in a list, far too little to guess the rest. */
const VISIBLE_PREFIX_LENGTH = 14;

export function toScimToken(row: ScimTokenRow): components['schemas']['ScimToken'] {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

export async function createToken(deps: AppDeps, principal: Principal, membership: Membership, input: { name: string }) {
  // A SCIM token can create and remove members: a privileged action (docs/people-and-roles.md#roles-and-permissions).
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
  await requireFeature(deps.db, deps.settings, membership.organizationId, 'scim');
  const token = randomSecret(TOKEN_PREFIX);
  const row = await deps.db.transaction().execute(async (trx) => {
    const inserted = await store.insertToken(trx, {
      id: newId('scimToken'),
      organizationId: membership.organizationId,
      memberId: membership.memberId,
      name: input.name,
      prefix: token.slice(0, VISIBLE_PREFIX_LENGTH),
      tokenHash: sha256Hex(token),
      now: deps.clock.now(),
    });
    await recordChange(trx, deps.audit, { action: 'scim_token.created', target: { type: 'scim_token', id: inserted.id }, changes: created({ name: inserted.name, prefix: inserted.prefix }) });
    return inserted;
  });
  return { item: toScimToken(row), token };
}

export async function listTokens(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'scim-tokens',
    page,
    async (after, take) => positioned(await store.listTokens(deps.db, membership.organizationId, after, take)),
    (row) => toScimToken(row),
  );
}

export async function revokeToken(deps: AppDeps, principal: Principal, membership: Membership, tokenId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.revokeToken(trx, membership.organizationId, tokenId, deps.clock.now()))) {
      throw new NotFound('scim_token_not_found', 'The SCIM token could not be found.');
    }
    await recordChange(trx, deps.audit, { action: 'scim_token.revoked', target: { type: 'scim_token', id: tokenId } });
  });
}

/** An account taken over: the SCIM tokens its members created end (src/account/takeover.ts). */
export const revokeTokensCreatedByUser = store.revokeTokensCreatedByUser;

import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { Conflict, Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { randomSecret, sha256Hex } from '../lib/crypto';
import { positioned, type PageRequest } from '../lib/pagination';
import { requireFreshSession } from '../access/role-permissions';
import { created, deleted, recordChange } from '../audit';
import { lockForChange, serviceAccountNotFound } from './service';
import * as store from './store';
import type { SecretRow } from './store';

/**
 * A service account's client secrets (docs/service-accounts.md): `cpc_` + 256 random bits, shown
 * once, stored as SHA-256. At most MAX_LIVE_SECRETS unexpired at a time: enough to rotate (add the
 * new one, move the clients, delete the old one), few enough that a forgotten one stands out.
 */
const SECRET_PREFIX = 'cpc';
export const MAX_LIVE_SECRETS = 5;

type Secret = components['schemas']['ServiceAccountSecret'];

export function toSecret(row: SecretRow): Secret {
  return {
    id: row.id,
    // The OAuth client id of a service account is its own id.
    clientId: row.service_account_id,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at?.toISOString() ?? null,
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

/**
 * A new secret, its value in the answer only. Creating a credential needs a recent sign-in (as an
 * API key does) and the caller must hold every permission of the account (else its secret would
 * hand them more than they hold). The sixth unexpired secret is 409 `secret_limit_reached`; the
 * account's row is locked while counting, so two requests cannot both pass at five.
 */
export async function createSecret(deps: AppDeps, principal: Principal, membership: Membership, serviceAccountId: string, input: { expiresAt?: string }) {
  const now = deps.clock.now();
  requireFreshSession(principal, now, deps.settings.freshSessionMaxAgeMs);
  const expiresAt = input.expiresAt === undefined ? null : new Date(input.expiresAt);
  if (expiresAt && !(expiresAt.getTime() > now.getTime())) throw Invalid.at(['body', 'expiresAt'], 'must be in the future');
  const clientSecret = randomSecret(SECRET_PREFIX);
  const row = await deps.db.transaction().execute(async (trx) => {
    await lockForChange(trx, membership, serviceAccountId);
    if ((await store.countLiveSecrets(trx, serviceAccountId, now)) >= MAX_LIVE_SECRETS) {
      throw new Conflict('secret_limit_reached', `A service account has at most ${MAX_LIVE_SECRETS} unexpired secrets: delete one before adding another.`);
    }
    const inserted = await store.insertSecret(trx, {
      id: newId('serviceAccountSecret'),
      organizationId: membership.organizationId,
      serviceAccountId,
      secretHash: sha256Hex(clientSecret),
      now,
      expiresAt,
    });
    await recordChange(trx, deps.audit, {
      action: 'service_account.secret_created',
      target: { type: 'service_account', id: serviceAccountId },
      changes: created({ secretId: inserted.id, expiresAt }),
    });
    return inserted;
  });
  return { item: toSecret(row), clientSecret };
}

export async function listSecrets(deps: AppDeps, membership: Membership, serviceAccountId: string, page: PageRequest) {
  if (!(await store.findServiceAccount(deps.db, membership.organizationId, serviceAccountId))) throw serviceAccountNotFound();
  return deps.cursors.page(
    'service-account-secrets',
    page,
    async (after, take) => positioned(await store.listSecrets(deps.db, membership.organizationId, serviceAccountId, after, take)),
    (row) => toSecret(row),
  );
}

/** The secret stops working at once (the lookup finds no row). */
export async function deleteSecret(deps: AppDeps, membership: Membership, serviceAccountId: string, secretId: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await lockForChange(trx, membership, serviceAccountId);
    if (!(await store.deleteSecret(trx, membership.organizationId, serviceAccountId, secretId))) {
      throw new NotFound('service_account_secret_not_found', 'The secret could not be found.');
    }
    await recordChange(trx, deps.audit, {
      action: 'service_account.secret_deleted',
      target: { type: 'service_account', id: serviceAccountId },
      changes: deleted({ secretId }),
    });
  });
}

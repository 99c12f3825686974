import type { Db } from '../db/schema';
import { sha256Hex } from '../lib/crypto';
import * as store from './store';

/**
 * What other areas ask of a service account's credentials (docs/service-accounts.md): the
 * authorization server checks a client secret and an account's state, the API-key principal
 * stamps the account's last use. Re-exported by ./service.ts.
 */

/** Writing `last_used_at` on every use would turn reads into writes; once a minute is enough (as API keys). */
const LAST_USED_GRANULARITY_MS = 60_000;

/** A client secret is `cpc_` and 43 base64url characters; anything much longer is not one of ours. */
const MAX_SECRET_LENGTH = 256;

export interface VerifiedServiceAccount {
  organizationId: string;
  memberId: string;
  serviceAccountId: string;
}

/**
 * `secret` is a live (unexpired) client secret of service account `serviceAccountId`, the account
 * is enabled, its member active and its organization there: who it acts as, else null. Looked up
 * by the secret's SHA-256 (a 256-bit random secret: the hash is the right store, and the lookup is
 * an index hit that compares no secret in JavaScript). Stamps the secret's and the account's
 * `last_used_at`, at most once a minute each.
 */
export async function verifyServiceAccountSecret(db: Db, serviceAccountId: string, secret: string, now: Date): Promise<VerifiedServiceAccount | null> {
  if (typeof secret !== 'string' || secret.length === 0 || secret.length > MAX_SECRET_LENGTH) return null;
  const row = await store.findLiveSecret(db, serviceAccountId, sha256Hex(secret), now);
  if (!row) return null;
  const staleBefore = new Date(now.getTime() - LAST_USED_GRANULARITY_MS);
  if (!row.secretLastUsedAt || row.secretLastUsedAt < staleBefore) await store.touchSecret(db, row.secretId, now, staleBefore);
  await recordServiceAccountUse(db, row.serviceAccountId, row.accountLastUsedAt, now);
  return { organizationId: row.organizationId, memberId: row.memberId, serviceAccountId: row.serviceAccountId };
}

export interface ServiceAccountState {
  /** False for an unknown id and for a deleted account (its member removed). */
  exists: boolean;
  /** Disabled: none of its credentials or tokens may work until it is enabled again. */
  disabled: boolean;
  organizationId: string | null;
  memberId: string | null;
}

/** A service account's state by id alone (any organization): what a token issued to it must re-check on every request. */
export async function serviceAccountState(db: Db, id: string): Promise<ServiceAccountState> {
  const row = await store.findAccountState(db, id);
  if (!row || row.removed_at !== null) return { exists: false, disabled: false, organizationId: null, memberId: null };
  return { exists: true, disabled: row.disabled_at !== null, organizationId: row.organization_id, memberId: row.member_id };
}

/** Stamps the account's last use when `lastUsedAt` (as the caller read it) is over a minute old. */
export async function recordServiceAccountUse(db: Db, serviceAccountId: string, lastUsedAt: Date | null, now: Date): Promise<void> {
  const staleBefore = new Date(now.getTime() - LAST_USED_GRANULARITY_MS);
  if (!lastUsedAt || lastUsedAt < staleBefore) await store.touchServiceAccount(db, serviceAccountId, now, staleBefore);
}

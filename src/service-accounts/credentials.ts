import { createHash, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/schema';
import { sha256Hex } from '../lib/crypto';
import * as store from './store';
import { findClientAccount } from './client-store';

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
  await recordSecretUse(db, row, now);
  return { organizationId: row.organizationId, memberId: row.memberId, serviceAccountId: row.serviceAccountId };
}

/** Stamps the secret's and the account's `last_used_at`, each at most once a minute. */
async function recordSecretUse(db: Db, used: { secretId: string; secretLastUsedAt: Date | null; serviceAccountId: string; accountLastUsedAt: Date | null }, now: Date): Promise<void> {
  const staleBefore = new Date(now.getTime() - LAST_USED_GRANULARITY_MS);
  if (!used.secretLastUsedAt || used.secretLastUsedAt < staleBefore) await store.touchSecret(db, used.secretId, now, staleBefore);
  await recordServiceAccountUse(db, used.serviceAccountId, used.accountLastUsedAt, now);
}

/** A service account as an OAuth client: who it acts as, its role now, and the check of a secret presented with the same request. */
export interface ServiceAccountAsClient {
  organizationId: string;
  memberId: string;
  role: string;
  roleBuiltIn: boolean | null;
  rolePermissions: string[] | null;
  /** As verifyServiceAccountSecret, against the live secrets the lookup read (no round trip unless a use is stamped). */
  verifySecret(secret: string, now: Date): Promise<VerifiedServiceAccount | null>;
}

/**
 * The authorization server's lookup of a service account (src/oauth/clients.ts): in one statement,
 * the account enabled, its member active, its organization not scheduled for deletion, its role,
 * and its live secrets' SHA-256 hashes, so the token request checks its secret without a second
 * round trip. The presented secret's hash is compared with each in constant time. What it read
 * serves the one request that read it: a secret deleted or an account disabled after it is refused
 * from the next request.
 */
export async function serviceAccountAsClient(db: Db, serviceAccountId: string, now: Date): Promise<ServiceAccountAsClient | undefined> {
  const row = await findClientAccount(db, serviceAccountId, now);
  if (!row) return undefined;
  const verified: VerifiedServiceAccount = { organizationId: row.organizationId, memberId: row.memberId, serviceAccountId };
  return {
    organizationId: row.organizationId,
    memberId: row.memberId,
    role: row.role,
    roleBuiltIn: row.roleBuiltIn,
    rolePermissions: row.rolePermissions,
    verifySecret: async (secret, at) => {
      if (typeof secret !== 'string' || secret.length === 0 || secret.length > MAX_SECRET_LENGTH) return null;
      const presented = createHash('sha256').update(secret, 'utf8').digest();
      const match = row.secrets.find((k) => {
        const stored = Buffer.from(k.hash, 'hex');
        return stored.length === presented.length && timingSafeEqual(stored, presented);
      });
      if (!match) return null;
      await recordSecretUse(db, { secretId: match.id, secretLastUsedAt: match.lastUsedAt, serviceAccountId, accountLastUsedAt: row.accountLastUsedAt }, at);
      return verified;
    },
  };
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

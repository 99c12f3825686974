import { createPublicKey, generateKeyPairSync, randomBytes, type JsonWebKey, type KeyObject } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/schema';
import type { SecretBox } from '../lib/crypto';

/**
 * The keys access tokens are signed with (docs/oauth.md#signing-keys). The first process that needs
 * one makes it (RSA 2048, RS256: the algorithm RFC 9068 requires every resource server to support)
 * and stores it with its private half sealed with SECRET_KEY; a replica racing it loses the insert
 * (one signing key at a time, a unique index) and reads the winner's. Rotation retires the signing
 * key and makes a new one; the retired key stays in the JWKS and keeps verifying until every token
 * it can have signed has expired.
 *
 * Each process caches what it read: signing keys for REFRESH_MS (so a replica signs with a new key
 * at most that long after another rotated), verification keys until a token names a kid it does
 * not know (read again at once, at most once a second, so a flood of forged kids costs one query a
 * second).
 */
export const SIGNING_ALG = 'RS256' as const;
const REFRESH_MS = 30_000;
const UNKNOWN_KID_RELOAD_MS = 1_000;
/** Clock skew allowed on top of a retired key's last token. */
const SKEW_MS = 60_000;

export interface VerificationKey {
  kid: string;
  key: KeyObject;
  /** Null while it signs; a retired key verifies until then. */
  verifyUntil: Date | null;
}

export interface SigningKeys {
  /** Private JWKs for oidc-provider, the signing key first (the library signs with the first of its algorithm). */
  jwks: (JsonWebKey & { kid: string; alg: string; use: string })[];
  /** The kids in order: changes when a key is added or leaves. */
  version: string;
}

interface KeyRow {
  kid: string;
  public_jwk: Record<string, unknown>;
  retired_at: Date | null;
  verify_until: Date | null;
}

/** Keys that verify now: the signing one, and the retired ones until their `verify_until`. */
function liveKeys(db: Db, now: Date) {
  return db
    .selectFrom('oauth_signing_keys')
    .select(['kid', 'public_jwk', 'retired_at', 'verify_until'])
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('verify_until', '>', now)]))
    .orderBy('created_at', 'desc');
}

function newKeyRow(secrets: SecretBox, now: Date) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomBytes(12).toString('base64url');
  const publicJwk = { ...publicKey.export({ format: 'jwk' }), kid, alg: SIGNING_ALG, use: 'sig' };
  const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: SIGNING_ALG, use: 'sig' };
  return {
    kid,
    alg: SIGNING_ALG,
    public_jwk: JSON.stringify(publicJwk),
    private_jwk_sealed: secrets.encrypt(JSON.stringify(privateJwk)),
    created_at: now,
  };
}

/** Makes the first key when none signs (a racing replica's insert wins; the loser's does nothing). */
async function ensureSigningKey(db: Db, secrets: SecretBox, now: Date): Promise<void> {
  const current = await db.selectFrom('oauth_signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst();
  if (current) return;
  await db.insertInto('oauth_signing_keys').values(newKeyRow(secrets, now)).onConflict((oc) => oc.doNothing()).execute();
}

/**
 * POST /v1/admin/oauth/rotate-keys: the signing key retires (verifying until every token it signed
 * has expired, `accessTokenTtlSeconds` from now, plus the time another replica may still sign with
 * it and some clock skew) and a new one signs. Returns the new kid.
 */
export async function rotateSigningKey(db: Db, secrets: SecretBox, now: Date, accessTokenTtlSeconds: number): Promise<{ kid: string; retired: string[]; verifyUntil: Date }> {
  const verifyUntil = new Date(now.getTime() + accessTokenTtlSeconds * 1000 + 2 * REFRESH_MS + SKEW_MS);
  const row = newKeyRow(secrets, now);
  const retired = await db.transaction().execute(async (trx) => {
    // Serialises rotations: the second waits for the first and retires the key it made.
    await sql`LOCK TABLE oauth_signing_keys IN SHARE ROW EXCLUSIVE MODE`.execute(trx);
    const old = await trx.updateTable('oauth_signing_keys').set({ retired_at: now, verify_until: verifyUntil }).where('retired_at', 'is', null).returning('kid').execute();
    await trx.insertInto('oauth_signing_keys').values(row).execute();
    return old.map((r) => r.kid);
  });
  forget(db);
  return { kid: row.kid, retired, verifyUntil };
}

interface Cache {
  signing?: { at: number; value: Promise<SigningKeys> };
  verifying?: { at: number; value: Promise<Map<string, VerificationKey>> };
}
const caches = new WeakMap<object, Cache>();

function cacheOf(db: Db): Cache {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = {}));
  return cache;
}

/** After a rotation in this process: both sets are read again on next use. */
function forget(db: Db): void {
  caches.delete(db);
}

/** The private keys oidc-provider signs with (made on first use), read again every REFRESH_MS. */
export function signingKeys(db: Db, secrets: SecretBox, now: Date): Promise<SigningKeys> {
  const cache = cacheOf(db);
  if (cache.signing && Date.now() - cache.signing.at < REFRESH_MS) return cache.signing.value;
  const value = (async (): Promise<SigningKeys> => {
    await ensureSigningKey(db, secrets, now);
    const rows = await db
      .selectFrom('oauth_signing_keys')
      .select(['kid', 'private_jwk_sealed'])
      .where((eb) => eb.or([eb('retired_at', 'is', null), eb('verify_until', '>', now)]))
      // The signing key first (retired_at null sorts first descending), then the newest retired.
      .orderBy(sql`retired_at IS NULL`, 'desc')
      .orderBy('created_at', 'desc')
      .execute();
    const jwks = rows.map((r) => JSON.parse(secrets.decrypt(r.private_jwk_sealed)) as SigningKeys['jwks'][number]);
    return { jwks, version: rows.map((r) => r.kid).join(',') };
  })();
  cache.signing = { at: Date.now(), value };
  value.catch(() => {
    if (cache.signing?.value === value) cache.signing = undefined;
  });
  return value;
}

async function readVerificationKeys(db: Db, now: Date): Promise<Map<string, VerificationKey>> {
  const rows: KeyRow[] = await liveKeys(db, now).execute();
  const keys = new Map<string, VerificationKey>();
  for (const row of rows) {
    keys.set(row.kid, { kid: row.kid, key: createPublicKey({ key: row.public_jwk as JsonWebKey, format: 'jwk' }), verifyUntil: row.verify_until });
  }
  return keys;
}

/**
 * The public key a token's `kid` names, if it verifies at `now`: from the cache, or read again when
 * the kid is unknown (another replica made it) and the last read is over a second old.
 */
export async function verificationKey(db: Db, kid: string, now: Date): Promise<KeyObject | null> {
  const cache = cacheOf(db);
  let keys = cache.verifying ? await cache.verifying.value.catch(() => undefined) : undefined;
  const age = cache.verifying ? Date.now() - cache.verifying.at : Infinity;
  if (!keys || (!keys.has(kid) && age >= UNKNOWN_KID_RELOAD_MS)) {
    keys = await reloadVerificationKeys(db, cache, now);
  } else if (age >= REFRESH_MS) {
    // Read again in the background (a key another replica retired leaves at its verify_until); this request uses what is cached.
    reloadVerificationKeys(db, cache, now).catch(() => undefined);
  }
  const found = keys.get(kid);
  if (!found || (found.verifyUntil && found.verifyUntil <= now)) return null;
  return found.key;
}

function reloadVerificationKeys(db: Db, cache: Cache, now: Date): Promise<Map<string, VerificationKey>> {
  const value = readVerificationKeys(db, now);
  cache.verifying = { at: Date.now(), value };
  value.catch(() => {
    if (cache.verifying?.value === value) cache.verifying = undefined;
  });
  return value;
}

import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';

/**
 * Secrets handling in one place.
 * - Passwords: argon2id (memory-hard) from @node-rs/argon2, a maintained native binding that runs
 *   off the event loop.
 * - Bearer secrets we mint (session tokens, API keys, invitation and worker tokens) carry 256 bits
 *   of randomness, so a single SHA-256 is enough to store them: nobody can brute-force the input,
 *   and lookup by hash stays an index hit.
 * - Secrets we must use later (OAuth tokens, client secrets, worker tokens for calling runtimes)
 *   are encrypted with AES-256-GCM, so a wrong key fails loudly instead of returning garbage.
 */

/** A random secret with a readable prefix, e.g. `cps_…` for sessions. */
export function randomSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time comparison of two strings (different lengths compare false without leaking where). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

/**
 * `standard`: @node-rs/argon2's defaults (argon2id, 19 MiB, 2 passes: OWASP's recommendation).
 * `test`: 1 MiB and 1 pass, for test suites only (PASSWORD_HASH_COST=test): they create hundreds
 * of users, and the hash cost is not what they test. Verifying reads the cost from the hash.
 */
export type PasswordHashCost = 'standard' | 'test';
const ARGON2_COST: Record<PasswordHashCost, { memoryCost?: number; timeCost?: number }> = {
  standard: {},
  test: { memoryCost: 1024, timeCost: 1 },
};

export function hashPassword(password: string, cost: PasswordHashCost = 'standard'): Promise<string> {
  return argon2Hash(password, ARGON2_COST[cost]);
}

export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2Verify(hash, password);
  } catch {
    return false;
  }
}

/**
 * A fixed argon2 hash to verify against when an e-mail is unknown, so sign-in takes similar time;
 * made at the same cost as the users' hashes.
 */
const decoyHashes = new Map<PasswordHashCost, Promise<string>>();
export function decoyPasswordHash(cost: PasswordHashCost = 'standard'): Promise<string> {
  let decoy = decoyHashes.get(cost);
  if (!decoy) decoyHashes.set(cost, (decoy = hashPassword(randomBytes(16).toString('hex'), cost)));
  return decoy;
}

export function hmacBase64url(key: Buffer, value: string): string {
  return createHmac('sha256', key).update(value, 'utf8').digest('base64url');
}

/** Authenticated encryption with a key derived from SECRET_KEY; output `v1.<iv>.<tag>.<ciphertext>`. */
export class SecretBox {
  private readonly key: Buffer;
  constructor(secretKey: string) {
    this.key = createHash('sha256').update(`secretbox:${secretKey}`).digest();
  }

  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** Throws when the value was not sealed with this key or was tampered with. */
  decrypt(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('secretbox: malformed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** A sub-key for a purpose (cursor signing, OAuth state), so one leaked use cannot forge another. */
export function deriveKey(secretKey: string, purpose: string): Buffer {
  return createHash('sha256').update(`${purpose}:${secretKey}`).digest();
}

import { randomInt } from 'node:crypto';
import { deriveKey, hmacBase64url } from '../lib/crypto';

/**
 * Recovery codes: ten single-use codes of 10 characters of a 31-letter alphabet (49 bits each), shown once. They
 * are stored as an HMAC under a key derived from SECRET_KEY, so a copy of the database alone does
 * not let anyone test guesses offline; 49 bits online against five tries per challenge is safe.
 */
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'; // no 0/o, 1/l/i: read off paper
export const RECOVERY_CODE_COUNT = 10;

export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const chars = Array.from({ length: 10 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/** The stored form of a code; dashes, spaces and case do not matter when it is typed back. */
export function recoveryCodeHash(secretKey: string, code: string): string {
  const canonical = code.toLowerCase().replace(/[\s-]/g, '');
  return hmacBase64url(deriveKey(secretKey, 'recovery-code'), canonical);
}

import { Invalid } from '../lib/errors';
import { lazy } from '../lib/lazy';

/**
 * The one rule for a password a person chooses (sign-up, bootstrap; password reset and change
 * call it too), as NIST SP 800-63B §5.1.1.2 puts it: check against values known to be commonly
 * used or expected, and against context-specific words. Length limits stay in the contract
 * (8 to 256 characters).
 *
 * The list of common passwords is the 49,233 most common passwords that @zxcvbn-ts/language-common
 * ships (ranked from leaked-password corpora; no network). It is loaded and turned into a Set on
 * first use (about 5 MB), not at start.
 */
const commonPasswords = lazy(() => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { dictionary } = require('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
  return new Set(dictionary['passwords-common'].map((p) => p.toLowerCase()));
});

export interface PasswordContext {
  /** The account's e-mail address (the password may be neither it nor its local part). */
  email: string;
  /** Where the password is in the request, for `details[].path` (default `['body', 'password']`). */
  field?: string[];
}

/** Throws 400 `invalid_request` naming the field when `password` may not be chosen. */
export function checkNewPassword(password: string, context: PasswordContext): void {
  const field = context.field ?? ['body', 'password'];
  const lower = password.trim().toLowerCase();
  const email = context.email.trim().toLowerCase();
  const localPart = email.slice(0, email.lastIndexOf('@'));
  if (lower === email || (localPart !== '' && lower === localPart)) {
    throw Invalid.at(field, 'must not be the e-mail address');
  }
  if (commonPasswords().has(lower)) {
    throw Invalid.at(field, 'is one of the most commonly used passwords; choose another');
  }
}

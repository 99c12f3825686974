import { Invalid } from '../lib/errors';
import { lazy } from '../lib/lazy';
import { estimate } from './password-strength';

/**
 * The one rule for a password a person chooses (sign-up, bootstrap; password reset and change
 * call it too), as NIST SP 800-63B §5.1.1.2 puts it: check against values known to be commonly
 * used or expected, and against context-specific words. Length limits stay in the contract
 * (8 to 256 characters).
 *
 * The list of common passwords is the 49,233 most common passwords that @zxcvbn-ts/language-common
 * ships (ranked from leaked-password corpora; no network). It is loaded and turned into a Set on
 * first use (about 5 MB), not at start.
 *
 * Then the strength estimate (docs/protection.md#passwords, ASVS V2.1): @zxcvbn-ts/core must
 * score it at least MIN_PASSWORD_SCORE, with the account's e-mail, its parts and name as words an
 * attacker knows. `aaaaaaaa`, `qwertyui` or `abcd1234` are refused; a passphrase of a few words is not.
 */
export const MIN_PASSWORD_SCORE = 3;

/** What the estimator's warning keys mean, for the refusal's message. */
const WARNINGS: Record<string, string> = {
  straightRow: 'a row of keys',
  keyPattern: 'a keyboard pattern',
  simpleRepeat: 'repeated characters',
  extendedRepeat: 'a repeated pattern',
  sequences: 'a sequence such as abc or 123',
  recentYears: 'a recent year',
  dates: 'a date',
  topTen: 'a very common password',
  topHundred: 'a very common password',
  common: 'a common password',
  similarToCommon: 'something close to a common password',
  wordByItself: 'a single word',
  namesByThemselves: 'a name',
  commonNames: 'a common name',
  userInputs: 'your e-mail address or name',
  pwned: 'a password seen in breaches',
};
const commonPasswords = lazy(() => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { dictionary } = require('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
  return new Set(dictionary['passwords-common'].map((p) => p.toLowerCase()));
});

export interface PasswordContext {
  /** The account's e-mail address (the password may be neither it nor its local part). */
  email: string;
  /** The account's name, when it has one (a word an attacker knows too). */
  name?: string | null;
  /** Where the password is in the request, for `details[].path` (default `['body', 'password']`). */
  field?: string[];
}

/** Throws 400 `invalid_request` naming the field when `password` may not be chosen. */
export async function checkNewPassword(password: string, context: PasswordContext): Promise<void> {
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
  const inputs = [email, localPart, ...localPart.split(/[^a-z0-9]+/), ...(context.name ? context.name.toLowerCase().split(/\s+/) : [])].filter((w) => w.length > 1);
  const { score, warning } = await estimate(password, inputs);
  if (score < MIN_PASSWORD_SCORE) {
    const why = warning && WARNINGS[warning] ? ` (it is or contains ${WARNINGS[warning]})` : '';
    throw Invalid.at(field, `is too easy to guess${why}; a few uncommon words together, or more characters, make a strong password`);
  }
}

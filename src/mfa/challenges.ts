import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { AppDeps } from '../domain/deps';
import { CodedError, Conflict, Unauthenticated, Unauthorized } from '../lib/errors';
import { newId } from '../lib/ids';
import { randomSecret, sha256Hex } from '../lib/crypto';
import * as limits from '../protection/rate-limit';
import * as users from '../users/service';
import { toUser } from '../users/mappers';
import { openSignInSession, signInOrganization } from '../auth/sign-in';
import * as store from './store';
import * as challengeStore from './challenge-store';
import { acceptedStep } from './totp';
import { recoveryCodeHash } from './recovery-codes';
import { authenticationOptions, verifyAuthentication } from './webauthn';
import { countWrongAnswer, guessingCheck } from './guessing';

import { CHALLENGE_MAX_FAILURES, CHALLENGE_TTL_MS, factorChanged, methodsFrom, relyingParty, secretKey, stored, type Method } from './service';

const CHALLENGE_TOKEN_PREFIX = 'mfc';

/**
 * The second step of a sign-in or a reauthentication (docs/second-factors.md): a challenge for a
 * user with factors, and its answer (a TOTP code, a recovery code or a passkey assertion) checked
 * against the per-challenge and per-account guessing limits. Enrolment is ./service.ts.
 */
export interface Challenge {
  token: string;
  methods: Method[];
  expiresAt: string;
}

/**
 * A challenge for a user who holds a second factor (null when they hold none): a sign-in or a
 * reauthentication of `sessionId` completes only through `verify` with one of `methods`.
 */
export async function challengeFor(deps: AppDeps, userId: string, purpose: 'sign_in' | 'reauthenticate', sessionId: string | null): Promise<Challenge | null> {
  const token = randomSecret(CHALLENGE_TOKEN_PREFIX);
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_MS);
  // One round trip: the factors, and the challenge only when they hold a second one.
  const factors = await store.factorsWithChallenge(deps.db, { id: newId('mfaChallenge'), userId, tokenHash: sha256Hex(token), purpose, sessionId, now, expiresAt });
  const methods = methodsFrom(factors);
  if (methods.length === 0) return null;
  return { token, methods, expiresAt: expiresAt.toISOString() };
}

/** An unknown, used, expired or killed challenge: 400 `invalid_token`, as a dead link is. */
function invalidToken(): CodedError<400> {
  return new CodedError(400, 'invalid_token', 'The challenge is unknown, used, expired or was answered wrongly five times: sign in again.');
}

async function liveChallenge(deps: AppDeps, token: string) {
  const challenge = await challengeStore.findLiveChallenge(deps.db, sha256Hex(token), deps.clock.now(), CHALLENGE_MAX_FAILURES);
  if (!challenge) throw invalidToken();
  return challenge;
}

export async function passkeyChallengeOptions(deps: AppDeps, challengeToken: string) {
  const challenge = await liveChallenge(deps, challengeToken);
  const passkeys = await store.listPasskeys(deps.db, challenge.user_id);
  if (passkeys.length === 0) throw new Conflict('mfa_method_unavailable', 'This account has no passkey: answer with another method.');
  const options = await authenticationOptions(relyingParty(deps), passkeys.map(stored));
  await challengeStore.setChallengeWebauthn(deps.db, challenge.id, options.challenge);
  return options;
}

export type Answer = { method: 'totp' | 'recovery_code'; code: string } | { method: 'passkey'; response: AuthenticationResponseJSON };

/**
 * Whether a recovery code or a passkey proves the factor; spends what it uses (the code, the
 * counter). A TOTP code is checked by totpStep and spent with the challenge (verify).
 */
async function proves(deps: AppDeps, userId: string, webauthnChallenge: string | null, answer: Answer, now: Date): Promise<boolean> {
  if (answer.method === 'totp') throw new Error('a TOTP code is checked by totpStep, not here');
  if (answer.method !== 'passkey') return store.useRecoveryCode(deps.db, userId, recoveryCodeHash(secretKey(deps), answer.code), now);
  if (!webauthnChallenge) throw new Conflict('passkey_options_required', 'Ask for request options first (POST /v1/auth/mfa/passkey-options).');
  const passkey = (await store.listPasskeys(deps.db, userId)).find((p) => p.credential_id === answer.response.id);
  if (!passkey) return false;
  const counter = await verifyAuthentication(relyingParty(deps), answer.response, webauthnChallenge, stored(passkey));
  return counter !== null && (await store.advancePasskey(deps.db, userId, passkey.id, passkey.counter, counter, now));
}

/** The step a TOTP code proves (checked, not spent), or null. */
async function totpStep(deps: AppDeps, row: { secret_sealed: string; confirmed_at: Date | null; last_used_step: string | null } | null, code: string, now: Date): Promise<number | null> {
  if (!row?.confirmed_at) return null;
  return acceptedStep(deps.secrets.decrypt(row.secret_sealed), code, now, row.last_used_step === null ? null : Number(row.last_used_step));
}

/**
 * A wrong answer: counts against the challenge, the sign-in limits of the e-mail and the IP, and
 * the account's second-factor limit (./guessing.ts), which a right password does not clear.
 */
async function refuseAnswer(deps: AppDeps, challengeId: string, user: users.UserRow, ip: string): Promise<never> {
  await challengeStore.failChallenge(deps.db, challengeId);
  await limits.recordFailure(deps, 'signInEmail', users.normalizeEmail(user.email));
  await limits.recordFailure(deps, 'signInIp', ip);
  await countWrongAnswer(deps, user);
  throw new Unauthenticated('invalid_credentials', 'The second factor is incorrect.');
}

/** Thrown inside the transaction when the TOTP step was spent by another answer (rolls it back). */
class StepAlreadyUsed extends Error {}

export type Verified =
  | { purpose: 'sign_in'; user: ReturnType<typeof toUser>; session: users.NewSession; method: Method }
  | { purpose: 'reauthenticate'; user: ReturnType<typeof toUser>; authenticatedAt: string; method: Method };

/**
 * The second step. A wrong answer counts against the challenge (five kill it), against the
 * sign-in limits of the user's e-mail and of the IP, and against the account's own second-factor
 * limit, so fresh challenges (each needs the password, which clears the e-mail's count) do not
 * reset a guesser's budget.
 */
export async function verify(deps: AppDeps, challengeToken: string, answer: Answer, ip: string, userAgent: string | undefined): Promise<Verified> {
  const now = deps.clock.now();
  const found = await challengeStore.findChallengeToAnswer(deps.db, sha256Hex(challengeToken), now, CHALLENGE_MAX_FAILURES);
  if (!found) throw invalidToken();
  const { challenge, user, totp } = found;
  if (!user) throw new Unauthorized();
  const email = users.normalizeEmail(user.email);
  // Both limits in one read, and a sign-in's organization read beside it, while the TOTP code is
  // checked; nothing is spent before the limits allow it.
  const [failing, organization, step] = await Promise.all([
    limits.assertNoneLimited(deps, [['signInEmail', email], ['signInIp', ip], guessingCheck(user.id)]),
    challenge.purpose === 'sign_in' ? signInOrganization(deps.db, user.id) : undefined,
    answer.method === 'totp' ? totpStep(deps, totp, answer.code, now) : null,
  ]);
  const proven = answer.method === 'totp' ? step !== null : await proves(deps, user.id, challenge.webauthn_challenge, answer, now);
  if (!proven) return refuseAnswer(deps, challenge.id, user, ip);
  try {
    return await deps.db.transaction().execute(async (trx): Promise<Verified> => {
      if (answer.method === 'totp') {
        // The step and the challenge in one statement; a step spent by another answer is a wrong answer.
        const spent = await challengeStore.useTotpStepAndChallenge(trx, user.id, step!, challenge.id, now);
        if (!spent.step) throw new StepAlreadyUsed();
        if (!spent.challenge) throw invalidToken();
      } else if (!(await challengeStore.useChallenge(trx, challenge.id, now))) {
        throw invalidToken();
      }
      // A proven factor forgets the e-mail's failures; there is nothing to forget without a live window.
      if (failing.includes('signInEmail')) await limits.clear({ ...deps, db: trx }, 'signInEmail', email);
      if (answer.method === 'recovery_code') await factorChanged(deps, trx, user.id, { factor: 'recovery_codes', change: 'used' });
      if (challenge.purpose === 'reauthenticate' && challenge.session_id) {
        await users.markAuthenticated(trx, challenge.session_id, now);
        await users.setSessionSecondFactor(trx, challenge.session_id, answer.method);
        return { purpose: 'reauthenticate', user: toUser(user), authenticatedAt: now.toISOString(), method: answer.method };
      }
      const session = await openSignInSession(deps, trx, { userId: user.id, secondFactor: answer.method, organization }, { ip, userAgent }, now);
      return { purpose: 'sign_in', user: toUser(user), session, method: answer.method };
    });
  } catch (err) {
    if (err instanceof StepAlreadyUsed) return refuseAnswer(deps, challenge.id, user, ip);
    throw err;
  }
}

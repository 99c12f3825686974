import type { Transaction } from 'kysely';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { CodedError, Conflict, Forbidden, Invalid, NotFound, Unauthenticated, Unauthorized } from '../lib/errors';
import { newId } from '../lib/ids';
import { randomSecret, sha256Hex } from '../lib/crypto';
import * as limits from '../protection/rate-limit';
import * as users from '../users/service';
import { toUser } from '../users/mappers';
import { openSignInSession, signInOrganization } from '../auth/sign-in';
import * as store from './store';
import { acceptedStep, newTotpSecret, otpauthUrl } from './totp';
import { newRecoveryCodes, recoveryCodeHash } from './recovery-codes';
import { authenticationOptions, registrationOptions, verifyAuthentication, verifyRegistration, type RelyingParty, type StoredPasskey } from './webauthn';
import { countWrongAnswer, guessingCheck } from './guessing';
import { notifyFactorChange, recordFactorChange, recordPolicyChange, type FactorEvent } from './notices';
import { userIdOf } from '../access/roles';

/**
 * Second factors (docs/second-factors.md): enrolment of TOTP and passkeys, recovery codes, and the
 * second step of a sign-in or reauthentication. Secrets leave this module once: the TOTP secret in
 * the enrolment reply, recovery codes in the confirmation (or regeneration) reply. Nothing else
 * returns, logs or audits them.
 */
export type Method = 'totp' | 'passkey' | 'recovery_code';
export const CHALLENGE_TTL_MS = 5 * 60_000;
export const CHALLENGE_MAX_FAILURES = 5;
const CHALLENGE_TOKEN_PREFIX = 'mfc';
const REGISTRATION_TTL_MS = 5 * 60_000;

function secretKey(deps: AppDeps): string {
  if (!deps.settings.secretKey) throw new Error('SECRET_KEY is not set');
  return deps.settings.secretKey;
}

function relyingParty(deps: AppDeps): RelyingParty {
  return deps.settings.webauthn;
}

function sessionUser(principal: Principal): { userId: string; sessionId: string } {
  if (principal.kind !== 'session' || !principal.sessionId) throw new Unauthorized('This route needs a signed-in session.');
  return { userId: userIdOf(principal), sessionId: principal.sessionId };
}

function fresh(deps: AppDeps, principal: Principal): void {
  requireFreshSession(principal, deps.clock.now(), deps.settings.freshSessionMaxAgeMs);
}

async function userOf(deps: AppDeps, userId: string) {
  const user = await users.findUser(deps.db, userId);
  if (!user) throw new Unauthorized();
  return user;
}

/** Audited in each of the user's organizations and told by e-mail, inside the change's transaction. */
async function factorChanged(deps: AppDeps, trx: Transaction<DB>, userId: string, event: FactorEvent): Promise<void> {
  await recordFactorChange(trx, deps.audit, userId, event);
  await notifyFactorChange(deps, trx, userId, event);
}

/**
 * After a factor is removed: when it was the last one, the recovery codes go with it, and no
 * session of the user counts as a second-factor session any more, so an organization that
 * requires one closes to them at their next request until they enrol again
 * (docs/second-factors.md#requiring-it-of-an-organization).
 */
async function ifLastFactorGone(deps: AppDeps, trx: Transaction<DB>, userId: string, now: Date): Promise<void> {
  if ((await methodsOf(deps, trx, userId)).length > 0) return;
  await store.replaceRecoveryCodes(trx, userId, [], now);
  await users.forgetSecondFactorOfSessions(trx, userId);
}

export async function methodsOf(deps: AppDeps, db: AppDeps['db'] | Transaction<DB>, userId: string): Promise<Method[]> {
  return methodsFrom(await store.factorsOf(db, userId));
}

function methodsFrom(factors: store.Factors): Method[] {
  const methods: Method[] = [];
  if (factors.totp) methods.push('totp');
  if (factors.passkeys > 0) methods.push('passkey');
  if (methods.length > 0 && factors.recoveryCodes > 0) methods.push('recovery_code');
  return methods;
}

export async function status(deps: AppDeps, principal: Principal) {
  const { userId } = sessionUser(principal);
  const factors = await store.factorsOf(deps.db, userId);
  return { methods: await methodsOf(deps, deps.db, userId), totp: factors.totp, passkeys: factors.passkeys, recoveryCodesRemaining: factors.recoveryCodes };
}

// ---- TOTP enrolment ---------------------------------------------------------------------------

export async function startTotp(deps: AppDeps, principal: Principal) {
  const { userId } = sessionUser(principal);
  fresh(deps, principal);
  const user = await userOf(deps, userId);
  const secret = newTotpSecret();
  const pending = await store.putPendingTotp(deps.db, userId, deps.secrets.encrypt(secret), deps.clock.now());
  if (!pending) throw new Conflict('mfa_already_enrolled', 'An authenticator app is already enrolled; remove it first to enrol another.');
  return { secret, otpauthUrl: otpauthUrl(secret, deps.settings.webauthn.name, user.email) };
}

export async function confirmTotp(deps: AppDeps, principal: Principal, code: string) {
  const { userId, sessionId } = sessionUser(principal);
  const row = await store.findTotp(deps.db, userId);
  if (!row || row.confirmed_at) throw new Conflict('mfa_not_pending', 'There is no authenticator app enrolment to confirm: start one with POST /v1/me/mfa/totp.');
  const now = deps.clock.now();
  const step = await acceptedStep(deps.secrets.decrypt(row.secret_sealed), code, now, null);
  if (step === null) throw Invalid.at(['body', 'code'], 'code must be the 6-digit code the authenticator app shows now.');
  const codes = newRecoveryCodes();
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.useTotpStep(trx, userId, step, now, true))) throw new Conflict('mfa_not_pending', 'This enrolment was already confirmed.');
    await store.replaceRecoveryCodes(trx, userId, codes.map((c) => recoveryCodeHash(secretKey(deps), c)), now);
    // The code just proved the factor in this session: it counts as a second-factor session.
    await users.setSessionSecondFactor(trx, sessionId, 'totp');
    await factorChanged(deps, trx, userId, { factor: 'totp', change: 'enrolled' });
  });
  return { recoveryCodes: codes };
}

export async function removeTotp(deps: AppDeps, principal: Principal, code: string) {
  const { userId } = sessionUser(principal);
  fresh(deps, principal);
  const row = await store.findTotp(deps.db, userId);
  if (!row?.confirmed_at) throw new NotFound('mfa_not_enrolled', 'No authenticator app is enrolled.');
  const now = deps.clock.now();
  const step = await acceptedStep(deps.secrets.decrypt(row.secret_sealed), code, now, row.last_used_step === null ? null : Number(row.last_used_step));
  if (step === null) throw Invalid.at(['body', 'code'], 'code must be a current 6-digit code of the enrolled authenticator app, not one used before.');
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.useTotpStep(trx, userId, step, now, false))) {
      throw Invalid.at(['body', 'code'], 'code must be a current 6-digit code of the enrolled authenticator app, not one used before.');
    }
    await store.deleteTotp(trx, userId);
    await ifLastFactorGone(deps, trx, userId, now);
    await factorChanged(deps, trx, userId, { factor: 'totp', change: 'removed' });
  });
}

export async function regenerateRecoveryCodes(deps: AppDeps, principal: Principal) {
  const { userId } = sessionUser(principal);
  fresh(deps, principal);
  const codes = newRecoveryCodes();
  await deps.db.transaction().execute(async (trx) => {
    if ((await methodsOf(deps, trx, userId)).length === 0) {
      throw new Conflict('mfa_not_enrolled', 'Recovery codes back up a second factor: enrol an authenticator app or a passkey first.');
    }
    await store.replaceRecoveryCodes(trx, userId, codes.map((c) => recoveryCodeHash(secretKey(deps), c)), deps.clock.now());
    await factorChanged(deps, trx, userId, { factor: 'recovery_codes', change: 'regenerated' });
  });
  return { recoveryCodes: codes };
}

// ---- Passkeys ---------------------------------------------------------------------------------

function stored(row: store.PasskeyRow): StoredPasskey {
  return { credentialId: row.credential_id, publicKey: row.public_key, counter: Number(row.counter), transports: row.transports };
}

function passkeyItem(row: store.PasskeyRow) {
  return { id: row.id, name: row.name, createdAt: row.created_at.toISOString(), lastUsedAt: row.last_used_at?.toISOString() ?? null };
}

export async function passkeyRegistrationOptions(deps: AppDeps, principal: Principal) {
  const { userId } = sessionUser(principal);
  fresh(deps, principal);
  const user = await userOf(deps, userId);
  const existing = await store.listPasskeys(deps.db, userId);
  const options = await registrationOptions(relyingParty(deps), user, existing.map(stored));
  await store.putRegistrationChallenge(deps.db, userId, options.challenge, new Date(deps.clock.now().getTime() + REGISTRATION_TTL_MS));
  return options;
}

export async function registerPasskey(deps: AppDeps, principal: Principal, input: { name: string; response: RegistrationResponseJSON }) {
  const { userId, sessionId } = sessionUser(principal);
  fresh(deps, principal);
  const now = deps.clock.now();
  const challenge = await store.takeRegistrationChallenge(deps.db, userId, now);
  if (!challenge) throw new Conflict('passkey_options_required', 'Ask for creation options first (POST /v1/me/passkeys/options); they are good for five minutes and one response.');
  const credential = await verifyRegistration(relyingParty(deps), input.response, challenge);
  if (!credential) throw Invalid.at(['body', 'response'], 'response must be the authenticator\'s answer to the latest creation options, from an allowed origin.');
  return deps.db.transaction().execute(async (trx) => {
    const row = await store
      .insertPasskey(trx, { id: newId('passkey'), userId, name: input.name, ...credential, now })
      .catch((err: unknown) => {
        if ((err as { code?: string }).code === '23505') throw new Conflict('passkey_exists', 'This passkey is already registered.');
        throw err;
      });
    await users.setSessionSecondFactor(trx, sessionId, 'passkey');
    await factorChanged(deps, trx, userId, { factor: 'passkey', change: 'enrolled' });
    return passkeyItem(row);
  });
}

export async function listPasskeys(deps: AppDeps, principal: Principal) {
  const { userId } = sessionUser(principal);
  return (await store.listPasskeys(deps.db, userId)).map(passkeyItem);
}

export async function deletePasskey(deps: AppDeps, principal: Principal, passkeyId: string) {
  const { userId } = sessionUser(principal);
  fresh(deps, principal);
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.deletePasskey(trx, userId, passkeyId))) throw new NotFound('passkey_not_found', 'No such passkey.');
    await ifLastFactorGone(deps, trx, userId, deps.clock.now());
    await factorChanged(deps, trx, userId, { factor: 'passkey', change: 'removed' });
  });
}

// ---- The second step ----------------------------------------------------------------------------

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
  const challenge = await store.findLiveChallenge(deps.db, sha256Hex(token), deps.clock.now(), CHALLENGE_MAX_FAILURES);
  if (!challenge) throw invalidToken();
  return challenge;
}

export async function passkeyChallengeOptions(deps: AppDeps, challengeToken: string) {
  const challenge = await liveChallenge(deps, challengeToken);
  const passkeys = await store.listPasskeys(deps.db, challenge.user_id);
  if (passkeys.length === 0) throw new Conflict('mfa_method_unavailable', 'This account has no passkey: answer with another method.');
  const options = await authenticationOptions(relyingParty(deps), passkeys.map(stored));
  await store.setChallengeWebauthn(deps.db, challenge.id, options.challenge);
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
  await store.failChallenge(deps.db, challengeId);
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
  const found = await store.findChallengeToAnswer(deps.db, sha256Hex(challengeToken), now, CHALLENGE_MAX_FAILURES);
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
        const spent = await store.useTotpStepAndChallenge(trx, user.id, step!, challenge.id, now);
        if (!spent.step) throw new StepAlreadyUsed();
        if (!spent.challenge) throw invalidToken();
      } else if (!(await store.useChallenge(trx, challenge.id, now))) {
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

// ---- The organization's policy ------------------------------------------------------------------

export async function getPolicy(deps: AppDeps, membership: Membership) {
  const policy = await store.findPolicy(deps.db, membership.organizationId);
  return { requireMfa: policy.requireMfa, updatedAt: policy.updatedAt?.toISOString() ?? null };
}

export async function putPolicy(deps: AppDeps, principal: Principal, membership: Membership, requireMfa: boolean) {
  const { organizationId } = membership;
  const { userId } = sessionUser(principal);
  fresh(deps, principal);
  if (requireMfa && (await methodsOf(deps, deps.db, userId)).length === 0) {
    throw new Forbidden('mfa_enrollment_required', 'Enrol a second factor yourself before requiring one of every member (POST /v1/me/mfa/totp or /v1/me/passkeys).');
  }
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const before = await store.findPolicy(trx, organizationId);
    await store.putPolicy(trx, organizationId, requireMfa, now);
    if (before.requireMfa !== requireMfa) {
      await recordPolicyChange(trx, deps.audit, organizationId, before.requireMfa, requireMfa);
    }
  });
  return getPolicy(deps, membership);
}

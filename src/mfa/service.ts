import type { Transaction } from 'kysely';
import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import type { DB } from '../db/schema';
import type { AppDeps } from '../domain/deps';
import type { Membership, Principal } from '../domain/principal';
import { requireFreshSession } from '../access/role-permissions';
import { Conflict, Forbidden, Invalid, NotFound, Unauthorized } from '../lib/errors';
import { newId } from '../lib/ids';
import * as users from '../users/service';
import * as store from './store';
import { acceptedStep, newTotpSecret, otpauthUrl } from './totp';
import { newRecoveryCodes, recoveryCodeHash } from './recovery-codes';
import { registrationOptions, verifyRegistration, type RelyingParty, type StoredPasskey } from './webauthn';
import { notifyFactorChange, recordFactorChange, recordPolicyChange, type FactorEvent } from './notices';
import { userIdOf } from '../access/roles';

/**
 * Second factors (docs/second-factors.md): enrolment of TOTP and passkeys, recovery codes, and the
 * organization's policy; the second step of a sign-in or reauthentication is ./challenges.ts.
 * Secrets leave this module once: the TOTP secret in the enrolment reply, recovery codes in the
 * confirmation (or regeneration) reply. Nothing else returns, logs or audits them.
 */
export type Method = 'totp' | 'passkey' | 'recovery_code';
export const CHALLENGE_TTL_MS = 5 * 60_000;
export const CHALLENGE_MAX_FAILURES = 5;
const REGISTRATION_TTL_MS = 5 * 60_000;

export function secretKey(deps: AppDeps): string {
  if (!deps.settings.secretKey) throw new Error('SECRET_KEY is not set');
  return deps.settings.secretKey;
}

export function relyingParty(deps: AppDeps): RelyingParty {
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
export async function factorChanged(deps: AppDeps, trx: Transaction<DB>, userId: string, event: FactorEvent): Promise<void> {
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

export function methodsFrom(factors: store.Factors): Method[] {
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

export function stored(row: store.PasskeyRow): StoredPasskey {
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

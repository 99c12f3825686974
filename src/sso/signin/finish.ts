import type { Transaction } from 'kysely';
import type { DB } from '../../db/schema';
import type { AppDeps } from '../../domain/deps';
import { AppError, Invalid } from '../../lib/errors';
import { randomSecret, sha256Hex } from '../../lib/crypto';
import { createSession, openSessionFor, type Origin, type SessionInput } from '../../users/service';
import * as limits from '../../protection/rate-limit';
import { signInMember, type SsoProfile } from './identity';
import { errorCodeOf, withParams, type SignInOutcome } from './outcome';
import * as store from './store';
import type { LoginStateRow, SignInConnection } from './store';

/** The one-time code handed to `returnTo` (docs/sso.md#signing-in: 60 s, once). */
const EXCHANGE_CODE_TTL_MS = 60_000;
const EXCHANGE_CODE_PREFIX = 'cpx';

/** A login state a callback found, and the request field that named it (for refusals). */
export interface PendingSignIn {
  row: LoginStateRow;
  field: string[];
  /** Where the callback came from (the session opened records it). */
  origin: Origin;
}

export const stateRefused = (field: string[]) => Invalid.at(field, `${field[field.length - 1]} is not valid, has expired or was already used`);

/** The login state's connection, still enabled and of the protocol the callback speaks. */
export async function usableConnection(deps: AppDeps, pending: PendingSignIn, type: 'oidc' | 'saml'): Promise<SignInConnection> {
  const connection = await store.findConnection(deps.db, pending.row.connection_id);
  if (!connection || !connection.enabled || connection.type !== type) throw Invalid.at(pending.field, 'the connection of this sign-in is no longer enabled');
  return connection;
}

/** Runs the part of a callback after its state was read: failures count and go back to `returnTo`. */
export async function settle(deps: AppDeps, { row }: PendingSignIn, ip: string, work: () => Promise<SignInOutcome>): Promise<SignInOutcome> {
  try {
    return await work();
  } catch (err) {
    await limits.recordFailure(deps, 'ssoIp', ip);
    // A refusal (4xx) or a failing identity provider (502) goes back to the client application;
    // an unexpected failure stays a 500 here.
    if (row.return_to && err instanceof AppError && err.status !== 429 && err.status !== 500 && err.status !== 503) {
      return { kind: 'redirect', location: withParams(row.return_to, { error: errorCodeOf(err), error_description: err.message }) };
    }
    throw err;
  }
}

/**
 * One transaction: the login state consumed (single use), identity, user, member (just in time),
 * role mapping, audit, and then the session (no `returnTo`) or a one-time code for `returnTo`.
 * `guard` runs in it too (the SAML assertion-id replay check): any refusal writes nothing, and a
 * refused sign-in does not spend its state or its assertion.
 */
export async function finishSignIn(
  deps: AppDeps,
  connection: SignInConnection,
  profile: SsoProfile,
  pending: PendingSignIn,
  guard?: (trx: Transaction<DB>) => Promise<void>,
): Promise<SignInOutcome> {
  const now = deps.clock.now();
  const returnTo = pending.row.return_to;
  return deps.db.transaction().execute(async (trx) => {
    if (!(await store.consumeLoginState(trx, pending.row.state_hash, now))) throw stateRefused(pending.field);
    await guard?.(trx);
    const { user } = await signInMember(trx, deps, connection, profile);
    if (returnTo) {
      const code = randomSecret(EXCHANGE_CODE_PREFIX);
      await store.insertExchangeCode(trx, {
        hash: sha256Hex(code),
        userId: user.id,
        organizationId: connection.organization_id,
        connectionId: connection.id,
        verifierHash: pending.row.verifier_hash,
        now,
        expiresAt: new Date(now.getTime() + EXCHANGE_CODE_TTL_MS),
      });
      return { kind: 'redirect', location: withParams(returnTo, { code }) };
    }
    const opened = await openSessionFor(trx, deps, user, ssoSessionInput({ userId: user.id, organizationId: connection.organization_id, connectionId: connection.id, origin: pending.origin }), now);
    return { kind: 'session', body: { ok: true, ...opened } };
  });
}

/** An SSO session: marked with its connection, active in the connection's organization. */
export async function openSsoSession(
  trx: Transaction<DB>,
  deps: AppDeps,
  session: { userId: string; organizationId: string; connectionId: string; origin: Origin },
  now: Date,
) {
  return createSession(trx, deps, ssoSessionInput(session), now);
}

function ssoSessionInput({ userId, organizationId, connectionId, origin }: { userId: string; organizationId: string; connectionId: string; origin: Origin }): SessionInput {
  return { userId, authMethod: 'sso', activeOrganizationId: organizationId, ssoConnectionId: connectionId, ip: origin.ip, userAgent: origin.userAgent };
}


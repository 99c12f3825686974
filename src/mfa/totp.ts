import { lazy } from '../lib/lazy';

// Loaded on first use (src/lib/lazy.ts): only processes that serve second factors hold it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const otplib = lazy(() => require('otplib') as typeof import('otplib'));

/**
 * TOTP (RFC 6238: SHA-1, 6 digits, 30-second steps) through otplib, a maintained implementation
 * with audited crypto and base32 plugins, rather than our own HMAC truncation. A code is accepted
 * one step either side of now (clock drift) and only for a step after the last accepted one:
 * `afterTimeStep` refuses a replay, and the store records the step with a conditional update so
 * two concurrent uses of one code cannot both pass.
 */
const PERIOD_SECONDS = 30;

export function newTotpSecret(): string {
  return otplib().generateSecret();
}

export function otpauthUrl(secret: string, issuer: string, account: string): string {
  return otplib().generateURI({ issuer, label: account, secret, period: PERIOD_SECONDS, digits: 6, algorithm: 'sha1' });
}

/** The time step the code belongs to, or null when it is wrong, outside ±1 step, or not after `afterStep`. */
export async function acceptedStep(secret: string, code: string, now: Date, afterStep: number | null): Promise<number | null> {
  if (!/^\d{6}$/.test(code)) return null;
  const epoch = Math.floor(now.getTime() / 1000);
  const result = await otplib().verify({
    secret,
    token: code,
    epoch,
    period: PERIOD_SECONDS,
    epochTolerance: PERIOD_SECONDS,
    ...(afterStep === null ? {} : { afterTimeStep: afterStep }),
  }).catch(() => ({ valid: false as const }));
  return result.valid && 'timeStep' in result ? result.timeStep : null;
}

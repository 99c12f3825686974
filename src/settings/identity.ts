/** Accounts and tokens: the OAuth tokens' lifetimes and flows, e-mail verification, password hashing, passkeys. */
import type { PasswordHashCost } from '../lib/crypto';
import type { OAuthSettings, Settings } from './types';
import { bool, duration, origins, SettingsError, UNIT_MS, type Env } from './values';

const MAX_ACCESS_TOKEN_TTL_SECONDS = 3600;

export function oauth(env: Env): OAuthSettings {
  const accessTokenTtlMs = duration(env, 'ACCESS_TOKEN_TTL', 10 * UNIT_MS.m!);
  if (accessTokenTtlMs > MAX_ACCESS_TOKEN_TTL_SECONDS * 1000) throw new SettingsError(`ACCESS_TOKEN_TTL must be at most 1h, got "${env.ACCESS_TOKEN_TTL}"`);
  if (accessTokenTtlMs < 1000) throw new SettingsError(`ACCESS_TOKEN_TTL must be at least 1 second, got "${env.ACCESS_TOKEN_TTL}"`);
  const refreshTokenTtlMs = duration(env, 'REFRESH_TOKEN_TTL', 30 * UNIT_MS.d!);
  if (refreshTokenTtlMs < 1000) throw new SettingsError(`REFRESH_TOKEN_TTL must be at least 1 second, got "${env.REFRESH_TOKEN_TTL}"`);
  const dcr = (env.OAUTH_DCR || 'off').trim().toLowerCase();
  if (dcr !== 'off' && dcr !== 'open') throw new SettingsError(`OAUTH_DCR must be off or open, got "${env.OAUTH_DCR}"`);
  return {
    accessTokenTtlSeconds: Math.floor(accessTokenTtlMs / 1000),
    refreshTokenTtlSeconds: Math.floor(refreshTokenTtlMs / 1000),
    clientIdMetadataDocuments: bool(env, 'OAUTH_CIMD', true),
    dynamicRegistration: dcr,
    deviceFlow: bool(env, 'OAUTH_DEVICE_FLOW', true),
  };
}

export function emailVerification(env: Env): 'required' | 'optional' {
  const raw = (env.EMAIL_VERIFICATION || 'required').trim().toLowerCase();
  if (raw !== 'required' && raw !== 'optional') throw new SettingsError(`EMAIL_VERIFICATION must be required or optional, got "${env.EMAIL_VERIFICATION}"`);
  return raw;
}

export function passwordHashCost(env: Env): PasswordHashCost {
  const value = env.PASSWORD_HASH_COST || 'standard';
  if (value !== 'standard' && value !== 'test') throw new SettingsError(`PASSWORD_HASH_COST must be standard or test, got "${value}"`);
  return value;
}

/** Defaults from PUBLIC_BASE_URL: its host is the relying party id, its origin the one allowed origin. */
export function webauthn(env: Env, publicBaseUrl: string): Settings['webauthn'] {
  const base = new URL(publicBaseUrl);
  const id = env.WEBAUTHN_RP_ID || base.hostname;
  const allowed = origins(env, 'WEBAUTHN_ORIGINS');
  const list = allowed.length > 0 ? allowed : [base.origin];
  for (const origin of list) {
    const host = new URL(origin).hostname;
    if (host !== id && !host.endsWith(`.${id}`)) throw new SettingsError(`WEBAUTHN_ORIGINS: ${origin} is not ${id} or a subdomain of it (WEBAUTHN_RP_ID)`);
  }
  return { id, name: env.WEBAUTHN_RP_NAME || 'Organization Control Plane', origins: list };
}

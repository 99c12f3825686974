/**
 * Secrets never reach an audit entry: `recordChange` passes every `changes` object through
 * `redactChanges`, so a caller cannot forget. A field is secret by its name (password, secret,
 * token, key, credential, hash, authorization, cookie, in any casing or separator: `clientSecret`,
 * `api_key`, `hostToken`, `webhookSecret`) or by its value (a string shaped like a secret this
 * service mints: `cps_`, `cpk_`, `cpi_`, `cpw_`, `cpa_`, `cpc_`, `cpo_` + 43 characters, or a `whsec_` signing secret).
 * Secret values become '[redacted]' (null stays null, so "was set / was cleared" still shows).
 */
export const REDACTED = '[redacted]';

/** Normalised field names (lower case, letters and digits only) that end like a secret. */
const SECRET_NAME = /(password|passphrase|secret|token|apikey|privatekey|signingkey|credential|credentials|hash|authorization|cookie)$/;
/** Exact normalised names that are secrets even though they end in a harmless word. */
const SECRET_EXACT = new Set(['key', 'keys', 'otp', 'code', 'authorizationcode', 'refreshtokens', 'accesstokens']);
/** Normalised names that end like a secret but are not one. */
const NOT_SECRET = new Set(['hasclientsecret', 'hasapikey', 'hascredential', 'tokenurl', 'tokenendpoint', 'tokenexpiresat']);

const SECRET_VALUE = /\b(?:cp[skiwaco]_[A-Za-z0-9_-]{40,}|whsec_[A-Za-z0-9+/=]{20,})/;

export function isSecretField(name: string): boolean {
  const normalised = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (NOT_SECRET.has(normalised)) return false;
  return SECRET_EXACT.has(normalised) || SECRET_NAME.test(normalised);
}

export function looksLikeSecret(value: string): boolean {
  return SECRET_VALUE.test(value);
}

function redactValue(value: unknown, secret: boolean): unknown {
  if (value === null || value === undefined) return value ?? null;
  if (secret) {
    // `{from, to}` of a secret field keeps its shape: each side redacted (null stays null).
    if (typeof value === 'object' && !Array.isArray(value) && ('from' in value || 'to' in value)) {
      const pair = value as { from?: unknown; to?: unknown };
      return { from: pair.from == null ? null : REDACTED, to: pair.to == null ? null : REDACTED };
    }
    return REDACTED;
  }
  if (typeof value === 'string') return looksLikeSecret(value) ? REDACTED : value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, false));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactValue(v, isSecretField(k));
    return out;
  }
  return value;
}

/** A copy of `changes` with every secret field (at any depth) and secret-shaped string redacted. */
export function redactChanges(changes: Record<string, unknown>): Record<string, unknown> {
  return redactValue(changes, false) as Record<string, unknown>;
}

import { createHash } from 'node:crypto';

/**
 * Canonical JSON (the subset of RFC 8785 our entries use: objects with keys sorted by UTF-16 code
 * units, no whitespace, numbers and strings as JSON.stringify writes them; `undefined` members
 * dropped). Written here rather than taken from a package: it is a dozen lines, and the hash chain
 * depends on it never changing under an upgrade.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** hash = SHA-256(previous hash (hex text, '' for the first entry) ‖ canonical JSON), hex. */
export function chainHash(previousHash: string, canonical: string): string {
  return createHash('sha256').update(previousHash + canonical, 'utf8').digest('hex');
}

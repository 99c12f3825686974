/**
 * Postgres text and jsonb cannot hold U+0000, so a string carrying one fails at the insert (22021
 * or 22P05) after validation said yes. The JSON Schema cannot say "no NUL" for every string, so
 * the router looks once, before any handler, and names where the character is.
 */
export function findNul(value: unknown, at: string[], depth = 0): string[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? at : null;
  if (depth > 64 || value === null || typeof value !== 'object') return null;
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    if (key.includes('\u0000')) return [...at, key];
    const found = findNul(child, [...at, key], depth + 1);
    if (found) return found;
  }
  return null;
}

/** The first location in a request's path parameters, query or body holding U+0000, if any. */
export function nulInRequest(request: { params?: unknown; query?: unknown; body?: unknown }): string[] | null {
  return findNul(request.params, ['path']) ?? findNul(request.query, ['query']) ?? findNul(request.body, ['body']);
}

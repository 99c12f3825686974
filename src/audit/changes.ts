/**
 * Builders for `changes` ({field: {from, to}}). Values are copied as they are; recordChange
 * redacts secret fields afterwards, so passing a whole input object is safe.
 */
type Fields = Record<string, unknown>;

function plain(value: unknown): unknown {
  return value instanceof Date ? value.toISOString() : value === undefined ? null : value;
}

/** Every field of a new resource: `{field: {from: null, to: value}}`. */
export function created(fields: Fields): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = { from: null, to: plain(v) };
  return out;
}

/** Every field of a removed resource: `{field: {from: value, to: null}}`. */
export function deleted(fields: Fields): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = { from: plain(v), to: null };
  return out;
}

/** The fields of `after` whose value differs from `before` (compared as JSON). */
export function changed(before: Fields, after: Fields): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const [k, v] of Object.entries(after)) {
    if (v === undefined) continue;
    const from = plain(before[k]);
    const to = plain(v);
    if (JSON.stringify(from) !== JSON.stringify(to)) out[k] = { from, to };
  }
  return out;
}

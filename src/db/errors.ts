/**
 * Postgres error recognition for both drivers (node-postgres and PGlite both expose SQLSTATE as
 * `code`). Stores use these to turn constraint failures into domain errors; the error mapper uses
 * `isUnavailable` to answer 503 instead of 500 when the database is gone.
 */
function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function constraintName(err: unknown): string | undefined {
  const c = (err as { constraint?: unknown } | null)?.constraint;
  return typeof c === 'string' ? c : undefined;
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  return sqlState(err) === '23505' && (constraint === undefined || constraintName(err) === constraint);
}

export function isForeignKeyViolation(err: unknown, constraint?: string): boolean {
  return sqlState(err) === '23503' && (constraint === undefined || constraintName(err) === constraint);
}

/** A NULL into a NOT NULL column (23502), optionally of one table and column. */
export function isNotNullViolation(err: unknown, table?: string, column?: string): boolean {
  const e = err as { table?: unknown; column?: unknown } | null;
  return sqlState(err) === '23502' && (table === undefined || e?.table === table) && (column === undefined || e?.column === column);
}

/** Value errors the validator should have caught (too long, bad text representation, out of range). */
export function isBadValue(err: unknown): boolean {
  const code = sqlState(err);
  // 22021/22P05: a NUL byte or an unsupported escape in text or jsonb.
  return code === '22001' || code === '22P02' || code === '22003' || code === '22007' || code === '22008' || code === '22021' || code === '22P05' || code === '54000';
}

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', '57P01', '57P02', '57P03', '53300']);

export function isUnavailable(err: unknown): boolean {
  const code = sqlState(err);
  if (code && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
  const message = err instanceof Error ? err.message : '';
  return (
    /timeout exceeded when trying to connect|Connection terminated|connection timeout|Client has encountered a connection error|Query read timeout|the database system is (starting up|shutting down)/i.test(message)
  );
}

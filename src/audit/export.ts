import type { AuditEntry } from './record';

/** The entry's top-level fields, in the order of the CSV header. */
export const CSV_COLUMNS = ['id', 'organizationId', 'action', 'actor', 'target', 'changes', 'requestId', 'ip', 'userAgent', 'createdAt'] as const;

/** One NDJSON line. */
export function ndjsonLine(entry: AuditEntry): string {
  return `${JSON.stringify(entry)}\n`;
}

/**
 * One CSV field (RFC 4180 quoting). A value a spreadsheet would run as a formula (leading `=`,
 * `+`, `-`, `@`, tab or carriage return) gets a leading `'` (the OWASP CSV-injection advice).
 */
function csvField(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvHeader(): string {
  return `${CSV_COLUMNS.join(',')}\r\n`;
}

export function csvLine(entry: AuditEntry): string {
  return `${CSV_COLUMNS.map((c) => csvField(entry[c])).join(',')}\r\n`;
}

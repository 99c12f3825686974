/**
 * A person's or an organization's name as the service stores it (docs/protection.md#names):
 * control characters (C0 and C1, DEL: CR and LF among them), the line and paragraph separators
 * and the bidirectional embedding, override and isolate marks become a space, runs of white space
 * one space, and the ends are trimmed. Names reach mail subjects and bodies, pages and audit
 * entries; none of them may start a new line there or reorder what follows.
 */
const HIDDEN = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/gu;

export function plainName(value: string): string {
  return value.replace(HIDDEN, ' ').replace(/\s+/g, ' ').trim();
}

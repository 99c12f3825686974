/** The form of an e-mail address that `users.email_normalized` holds and lookups compare. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

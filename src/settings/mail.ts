/** The mail sender: SMTP_URL and MAIL_FROM. */
import { SettingsError, type Env } from './values';

/** SMTP_URL: smtp:// or smtps://; the value is a secret, so an error never repeats it. */
export function smtpUrl(env: Env): string | undefined {
  const raw = env.SMTP_URL || undefined;
  if (raw === undefined) return undefined;
  let parsed: URL | null = null;
  try {
    parsed = new URL(raw);
  } catch {
    // reported below without the value
  }
  if (!parsed || !['smtp:', 'smtps:'].includes(parsed.protocol) || !parsed.hostname) {
    throw new SettingsError('SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://… (the value is not shown: it may hold a password)');
  }
  return raw;
}

export function mailFrom(env: Env): string {
  const raw = (env.MAIL_FROM || '"Control Plane" <no-reply@localhost>').trim();
  if (!/^[^\r\n]*@[^\r\n]*$/.test(raw)) throw new SettingsError(`MAIL_FROM must be an address like "Acme" <no-reply@acme.example>, got "${raw}"`);
  return raw;
}

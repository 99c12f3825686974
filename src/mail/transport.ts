import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import type { MailSettings } from '../settings';

/**
 * Where messages go, through nodemailer (a well-kept mail library: SMTP with STARTTLS when the
 * server offers it, smtps://, connection pooling, RFC 5322 composition with MIME parts):
 * - SMTP_URL set: an SMTP pool of MAIL_CONCURRENCY connections;
 * - unset: nodemailer's stream transport composes the same RFC 5322 message and it is written to
 *   MAIL_DIR as `<message id>.eml` (written aside, then renamed: a reader never sees half a file).
 * SMTP_URL is a secret: it is never logged, and error texts are scrubbed of its password.
 */
export interface OutgoingMessage {
  id: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface MailTransport {
  /** For the start-up log: `smtp host:port` or the folder (never credentials). */
  readonly destination: string;
  send(message: OutgoingMessage): Promise<void>;
  close(): void;
}

/** A failed send, with a message safe to store and show operators (`lastError`). */
export class SendFailure extends Error {}

/** The address part of MAIL_FROM (`"Acme" <no-reply@acme.example>` → `no-reply@acme.example`). */
function fromAddress(from: string): string {
  return /<([^>]+)>/.exec(from)?.[1]?.trim() ?? from.trim();
}

/** A stable Message-ID per queued message, so a duplicate sent after a crash is recognisable as one. */
function messageId(id: string, from: string): string {
  const domain = fromAddress(from).split('@')[1] || 'localhost';
  return `<${id}@${domain}>`;
}

function compose(settings: MailSettings, m: OutgoingMessage): SendMailOptions {
  return { from: settings.from, to: m.to, subject: m.subject, text: m.text, html: m.html, messageId: messageId(m.id, settings.from) };
}

/** A short, secret-free account of an SMTP failure (nodemailer's code and the server's reply). */
function describeFailure(err: unknown, secret: string | null): string {
  const e = err as { code?: string; responseCode?: number; response?: string; message?: string };
  const parts = [e.code, e.responseCode ? String(e.responseCode) : null, e.response ?? e.message].filter(Boolean) as string[];
  let text = parts.join(' ').replace(/\s+/g, ' ').trim() || 'the message could not be sent';
  if (secret) text = text.split(secret).join('***');
  return text.slice(0, 500);
}

function smtpTransport(settings: MailSettings, smtpUrl: string): MailTransport {
  const url = new URL(smtpUrl);
  const password = url.password ? decodeURIComponent(url.password) : null;
  const transporter = nodemailer.createTransport({
    url: smtpUrl,
    pool: true,
    maxConnections: settings.concurrency,
    connectionTimeout: settings.timeoutMs,
    greetingTimeout: settings.timeoutMs,
    socketTimeout: settings.timeoutMs,
    logger: false,
  });
  return {
    destination: `smtp ${url.hostname}:${url.port || (url.protocol === 'smtps:' ? 465 : 587)}`,
    async send(m) {
      try {
        await transporter.sendMail(compose(settings, m));
      } catch (err) {
        throw new SendFailure(describeFailure(err, password));
      }
    },
    close: () => transporter.close(),
  };
}

function fileTransport(settings: MailSettings): MailTransport {
  const transporter = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const dir = path.resolve(settings.dir);
  let made: Promise<unknown> | null = null;
  return {
    destination: `files in ${dir}`,
    async send(m) {
      try {
        made ??= mkdir(dir, { recursive: true });
        await made;
        const info = await transporter.sendMail(compose(settings, m));
        const file = path.join(dir, `${m.id}.eml`);
        await writeFile(`${file}.tmp`, info.message as Buffer);
        await rename(`${file}.tmp`, file);
      } catch (err) {
        made = null;
        throw new SendFailure(describeFailure(err, null));
      }
    },
    close: () => transporter.close(),
  };
}

export function createMailTransport(settings: MailSettings): MailTransport {
  return settings.smtpUrl ? smtpTransport(settings, settings.smtpUrl) : fileTransport(settings);
}

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
 *   Its text and HTML parts are 8-bit UTF-8 (`eightBitParts`), so a person reading the file in an
 *   editor or pager copies a link as it is: quoted-printable, nodemailer's choice for long lines,
 *   breaks links across lines and writes `=` as `=3D` (a token copied from it is wrong).
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

/** RFC 5322 §2.1.1: a line is at most 998 octets (without its CRLF), 8-bit or not. */
const MAX_LINE_OCTETS = 998;

/**
 * A text part as nodemailer's `raw` node (its documented way to supply a MIME node whole): UTF-8,
 * `Content-Transfer-Encoding: 8bit`, CRLF line ends. A part with a line too long for 8-bit is left
 * to nodemailer (quoted-printable), which no message of ours has (src/mail/templates.ts).
 */
function eightBit(type: 'text/plain' | 'text/html', body: string): string | { raw: string } {
  const crlf = body.replace(/\r\n|\r|\n/g, '\r\n');
  if (crlf.split('\r\n').some((line) => Buffer.byteLength(line) > MAX_LINE_OCTETS)) return body;
  return { raw: `Content-Type: ${type}; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n${crlf}` };
}

/** The message for a file: the same, with both parts readable as they are. */
function eightBitParts(options: SendMailOptions, m: OutgoingMessage): SendMailOptions {
  return { ...options, text: eightBit('text/plain', m.text), html: eightBit('text/html', m.html) };
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
        const info = await transporter.sendMail(eightBitParts(compose(settings, m), m));
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

import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SMTPServer, type SMTPServerDataStream } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';
import pino from 'pino';
import { SecretBox } from '../../src/lib/crypto';
import { createJobRunner, type JobRunner } from '../../src/jobs';
import { createOutbound } from '../../src/outbound';
import { LINK_PATHS } from '../../src/mail/templates';
import type { TestApp } from './app';

/**
 * A real SMTP server in the test process (the `smtp-server` package on 127.0.0.1, a random port),
 * every message parsed with `mailparser`: the service's mail goes through nodemailer and a real SMTP
 * exchange, and tests follow the links in what arrives (docs/mail.md#tests). It can be told
 * to refuse (a 5xx reply), to drop connections, or be stopped and started again on the same port.
 */
export interface ReceivedMail {
  to: string;
  from: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  /** The raw RFC 5322 message as it arrived. */
  raw: string;
  parsed: ParsedMail;
}

export type MailboxMode = 'accept' | 'refuse' | 'drop';

export interface Mailbox {
  port: number;
  /** `smtp://127.0.0.1:<port>`, for SMTP_URL. */
  smtpUrl: string;
  received: ReceivedMail[];
  /** 'refuse': 554 to every message; 'drop': the connection is cut when a message is sent. */
  mode: MailboxMode;
  /** A message is recorded on arrival, and the server's reply to it held this long (a slow server). */
  replyDelayMs: number;
  /** Every message to `address` (case-insensitive) so far. */
  to(address: string): ReceivedMail[];
  /** Waits until `count` messages (default 1) to `address` (matching `subject`) arrived; returns the `count`th. */
  waitFor(address: string, options?: { count?: number; timeoutMs?: number; subject?: RegExp }): Promise<ReceivedMail>;
  /** Stops listening and cuts open connections (the server is down). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

function addressOf(field: ParsedMail['to'] | ParsedMail['from']): string {
  const list = Array.isArray(field) ? field : field ? [field] : [];
  return list.flatMap((a) => a.value.map((v) => v.address ?? '')).join(', ');
}

/** A raw RFC 5322 message, parsed with mailparser. */
async function receive(raw: Buffer): Promise<ReceivedMail> {
  const parsed = await simpleParser(raw);
  return {
    to: addressOf(parsed.to),
    from: addressOf(parsed.from),
    subject: parsed.subject ?? '',
    text: parsed.text ?? '',
    html: typeof parsed.html === 'string' ? parsed.html : '',
    messageId: parsed.messageId ?? '',
    raw: raw.toString('utf8'),
    parsed,
  };
}

export async function startMailbox(): Promise<Mailbox> {
  const received: ReceivedMail[] = [];
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let port = 0;
  let server: SMTPServer;

  const build = () => {
    const s = new SMTPServer({
      authOptional: true,
      // Plain SMTP on loopback: its default self-signed STARTTLS certificate is not one a client should trust.
      disabledCommands: ['STARTTLS'],
      logger: false,
      onMailFrom(_address, _session, callback) {
        if (box.mode === 'drop') {
          for (const socket of sockets) socket.destroy();
          return;
        }
        callback();
      },
      onData(stream: SMTPServerDataStream, _session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          if (box.mode === 'refuse') return callback(Object.assign(new Error('Message refused by policy'), { responseCode: 554 }));
          const raw = Buffer.concat(chunks);
          // Parsing can take a while on a busy machine; the reply is not held up by it (a slow reply
          // would make the client time out after the message was taken: a duplicate by design).
          void receive(raw).then(
            (mail) => {
              received.push(mail);
              for (const w of waiters) w();
            },
            () => undefined,
          );
          if (box.replyDelayMs > 0) setTimeout(() => callback(), box.replyDelayMs);
          else callback();
        });
      },
    });
    s.server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    return s;
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = build();
      server.on('error', () => undefined);
      server.server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server.server.address() as AddressInfo).port;
        resolve();
      });
    });

  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });

  const box: Mailbox = {
    get port() {
      return port;
    },
    get smtpUrl() {
      return `smtp://127.0.0.1:${port}`;
    },
    received,
    mode: 'accept',
    replyDelayMs: 0,
    to: (address) => received.filter((m) => m.to.toLowerCase().split(', ').includes(address.toLowerCase())),
    async waitFor(address, options = {}) {
      const count = options.count ?? 1;
      const matching = () => box.to(address).filter((m) => !options.subject || options.subject.test(m.subject));
      const deadline = Date.now() + (options.timeoutMs ?? 15_000);
      while (matching().length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no message #${count} to ${address} arrived (got ${box.to(address).length}: ${box.to(address).map((m) => m.subject).join('; ')})`);
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, Math.min(left, 200));
          waiters.add(wake);
        });
      }
      return matching()[count - 1]!;
    },
    stop,
    start: listen,
    close: stop,
  };
  await listen();
  return box;
}

/** The first link in a message's text part whose path is `path` (e.g. '/accept-invitation'). */
export function linkIn(mail: ReceivedMail, path: string): URL {
  for (const match of mail.text.matchAll(/https?:\/\/[^\s<>"]+/g)) {
    const url = new URL(match[0]);
    if (url.pathname === path) return url;
  }
  throw new Error(`no ${path} link in "${mail.subject}": ${mail.text}`);
}

/** The `token` query value of the first `path` link in a message: what a person's click carries. */
export function tokenIn(mail: ReceivedMail, path: string): string {
  const token = linkIn(mail, path).searchParams.get('token');
  if (!token) throw new Error(`the ${path} link in "${mail.subject}" has no token`);
  return token;
}

/** Settings for a test app sending to `mailbox`: short timeouts, a quick poll. */
export function mailEnv(mailbox: Mailbox): Record<string, string> {
  return { SMTP_URL: mailbox.smtpUrl, MAIL_POLL_MS: '20', MAIL_TIMEOUT_MS: '2000' };
}

/**
 * A job runner taking mail only, on the test app's database and clock (main.ts runs the same one
 * in the service). `start()` it to send in the background (every MAIL_POLL_MS), or drive it with
 * `runOnce()`; `stop()` it before the app closes.
 */
export function testMailer(t: TestApp): JobRunner {
  return createJobRunner({
    db: t.db,
    clock: t.clock,
    logger: pino({ level: 'silent' }),
    secrets: new SecretBox(t.settings.secretKey!),
    outbound: createOutbound({ allowedNetworks: [] }),
    settings: t.settings,
    kinds: { webhooks: false, mail: true },
  });
}

/**
 * Delivers the app's queued mail as the service does without SMTP_URL (nodemailer's RFC 5322
 * `.eml` files, here in a folder of the test's own) and returns every message in it, parsed with
 * `mailparser`, oldest first. For test files that need a link from a message but no SMTP server.
 */
export async function deliverToFolder(t: TestApp): Promise<ReceivedMail[]> {
  let dir = folders.get(t);
  if (!dir) {
    dir = await mkdtemp(path.join(tmpdir(), 'cp-test-mail-'));
    folders.set(t, dir);
  }
  const runner = createJobRunner({
    db: t.db,
    clock: t.clock,
    logger: pino({ level: 'silent' }),
    secrets: new SecretBox(t.settings.secretKey!),
    outbound: createOutbound({ allowedNetworks: [] }),
    settings: { ...t.settings, mail: { ...t.settings.mail, smtpUrl: undefined, dir } },
    kinds: { webhooks: false, mail: true },
  });
  await runner.runOnce();
  await runner.stop();
  // Message ids are TypeIDs: their names sort in the order the messages were queued.
  const files = (await readdir(dir)).filter((f) => f.endsWith('.eml')).sort();
  return Promise.all(
    files.map(async (f) => receive(await readFile(path.join(dir, f)))),
  );
}

const folders = new WeakMap<TestApp, string>();

/**
 * The token of the latest invitation link mailed to `email`: through `mailbox` when the app sends
 * to one (SMTP_URL), else through a folder of `.eml` files (deliverToFolder). What an invitee's
 * click carries; never read from the database.
 */
export async function invitationTokenFor(t: TestApp, email: string, mailbox?: Mailbox): Promise<string> {
  const linkPath = LINK_PATHS.acceptInvitation;
  if (mailbox) {
    const runner = testMailer(t);
    await runner.runOnce();
    await runner.stop();
    // How many invitations to this address the server took (a count, never a token), so the wait
    // below ends on the newest one.
    const { n } = await t.db
      .selectFrom('mail_messages')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where((eb) => eb(eb.fn('lower', ['recipient']), '=', email.toLowerCase()))
      .where('kind', '=', 'invitation')
      .where('status', '=', 'sent')
      .executeTakeFirstOrThrow();
    const invitations = await mailbox.waitFor(email, { count: Number(n), subject: INVITATION_SUBJECT });
    return tokenIn(invitations, linkPath);
  }
  const mine = (await deliverToFolder(t)).filter((m) => m.to.toLowerCase() === email.toLowerCase() && INVITATION_SUBJECT.test(m.subject));
  const last = mine[mine.length - 1];
  if (!last) throw new Error(`no invitation to ${email} was mailed`);
  return tokenIn(last, linkPath);
}

/** The subject of an invitation message (src/mail/templates.ts). */
export const INVITATION_SUBJECT = /(invited you|You are invited) to join /;

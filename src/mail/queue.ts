import type { Transaction } from 'kysely';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import { newId } from '../lib/ids';
import type { MailSettings, RateLimitSettings } from '../settings';
import { noticeWithinBudget, spendRecipientBudget } from './budget';
import { tracing } from '../observability/tracing';
import { insertMessage, insertMessages, type NewMessage } from './store';
import { renderMail, type MailInput, type RenderedMail, type TemplateContext } from './templates';

/** What queueing needs from the app's dependency bag (AppDeps has all of it). */
export interface MailDeps {
  secrets: SecretBox;
  clock: Clock;
  settings: { mail: MailSettings; rateLimits: RateLimitSettings };
}

/** The sealed part of a message: what the sender decrypts and nothing else reads. */
export interface MailBody {
  text: string;
  html: string;
}

/** MAIL_FROM's display name (`"Acme Control Plane" <…>` → `Acme Control Plane`), else a plain one. */
export function productName(from: string): string {
  const m = /^\s*"?([^"<]*?)"?\s*</.exec(from);
  return m?.[1]?.trim() || 'Control Plane';
}

export function templateContext(settings: MailSettings): TemplateContext {
  return { appBaseUrl: settings.appBaseUrl, productName: productName(settings.from) };
}

/**
 * A message ready to be queued: rendered, its body sealed (it carries the link; the caller keeps
 * only the hash of any link token it passes in, and the body is erased once sent or given up).
 * For a statement that writes it together with its change (`messageCtes` of ./store).
 */
export function prepareMail(deps: MailDeps, input: MailInput, options: { traceContext?: string | null } = {}): NewMessage {
  const rendered: RenderedMail = renderMail(input, templateContext(deps.settings.mail));
  const body: MailBody = { text: rendered.text, html: rendered.html };
  return {
    id: newId('mailMessage'),
    kind: input.kind,
    recipient: input.to,
    subject: rendered.subject,
    bodySealed: deps.secrets.encrypt(JSON.stringify(body)),
    traceContext: options.traceContext ?? tracing?.current() ?? null,
    now: deps.clock.now(),
  };
}

/** A prepared message as CTEs of the statement that writes the change causing it (see messageCtes). */
export { messageCtes as mailCtes } from './store';

/** Messages that tell of something already done; every other kind is asked for by someone. */
export type NoticeKind = 'security_notice' | 'password_changed';
export type NoticeInput = Extract<MailInput, { kind: NoticeKind }>;
export type AskedInput = Exclude<MailInput, { kind: NoticeKind }>;

async function insert(trx: Transaction<DB>, deps: MailDeps, input: MailInput, options: { traceContext?: string | null }): Promise<string> {
  const message = prepareMail(deps, input, options);
  await insertMessage(trx, message);
  return message.id;
}

/**
 * Queues a message someone asked for (a link, an invitation) inside the caller's transaction
 * (docs/mail.md#queueing-and-sending): the change and its message commit together or not at all,
 * and the job runner sends it afterwards (at least once, with retries). It spends one of the
 * recipient's budget first (./budget.ts): past it, 429 and the change rolls back. Returns the
 * message id.
 */
export async function queueMail(trx: Transaction<DB>, deps: MailDeps, input: AskedInput, options: { traceContext?: string | null } = {}): Promise<string> {
  await spendRecipientBudget({ ...deps, db: trx }, input.to);
  return insert(trx, deps, input, options);
}

/**
 * Queues a notice of something already done, as queueMail does, except past the recipient's
 * budget: then it is left unsent (null) and the change stands (./budget.ts says why).
 */
export async function queueNotice(trx: Transaction<DB>, deps: MailDeps, input: NoticeInput, options: { traceContext?: string | null } = {}): Promise<string | null> {
  if (!(await noticeWithinBudget({ ...deps, db: trx }, input.to))) return null;
  return insert(trx, deps, input, options);
}

/**
 * Notices the platform sends once per recipient for one event that concerns many (an
 * organization's deletion: src/org/lifecycle-job.ts). They spend no recipient budget: the event
 * cannot be repeated by a requester to flood an address. Rendered and sealed here, before the
 * caller's transaction; `queuePreparedNotices` writes them in it, in one statement.
 */
export function preparePlatformNotices(deps: MailDeps, inputs: NoticeInput[]): NewMessage[] {
  return inputs.map((input) => prepareMail(deps, input));
}

export async function queuePreparedNotices(trx: Transaction<DB>, messages: NewMessage[]): Promise<void> {
  await insertMessages(trx, messages);
}

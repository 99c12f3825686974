import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import type { MailSettings } from '../settings';
import type { MailBody } from './queue';
import { MAIL_CHANNEL, claimMessages, recordMailOutcomes, type ClaimedMessage, type MailOutcome } from './store';
import { SendFailure, type MailTransport } from './transport';
import { retryDelayMs } from '../jobs/backoff';
import { metrics } from '../observability/metrics';
import { tracing } from '../observability/tracing';
import type { ClaimOptions, JobKind } from '../jobs/runner';

export interface MailJobOptions {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  settings: MailSettings;
  transport: MailTransport;
}

/**
 * Outgoing mail as a kind of job (src/jobs/runner.ts): each claimed message is decrypted, handed
 * to the transport (SMTP or `.eml` files) and recorded as sent; a failure is retried after about
 * 5 s, 30 s, 2 min, 10 min, 1 h up to MAIL_MAX_ATTEMPTS, then marked failed. Either end erases
 * the body (and the link it carried).
 *
 * Duplicates. In the normal case each message is sent once: a claim leases it to one process, and
 * its outcome is written within milliseconds of the SMTP server's reply. A message can be sent
 * twice only when the send succeeded but its outcome was not recorded: the process died (or lost
 * the database) between the server's 250 and the outcome statement, or the connection dropped
 * after the server took the message but before its reply reached us. The lease then runs out (or
 * the failure is retried) and another attempt sends it again. Each such event costs at most one
 * extra copy of each message in flight in that process at that moment (MAIL_CONCURRENCY), and no
 * message is ever sent more than MAIL_MAX_ATTEMPTS times. Every copy carries the same Message-ID
 * (`<msg_…@domain>`), so mail clients and relays can recognise a duplicate.
 */
export class MailMessages implements JobKind<ClaimedMessage> {
  readonly name = 'mail';
  readonly channel = MAIL_CHANNEL;
  readonly concurrency: number;
  readonly pollMs: number;
  /** Three SMTP timeouts (connect, greeting, a command) and a margin: only a dead holder lets it expire. */
  readonly leaseMs: number;
  private outcomes: MailOutcome[] = [];

  constructor(private readonly options: MailJobOptions) {
    this.concurrency = options.settings.concurrency;
    this.pollMs = options.settings.pollMs;
    this.leaseMs = options.settings.timeoutMs * 4 + 5000;
  }

  claim(claim: ClaimOptions): Promise<ClaimedMessage[]> {
    return claimMessages(this.options.db, claim);
  }

  pendingOutcomes(): number {
    return this.outcomes.length;
  }

  async attempt(m: ClaimedMessage): Promise<void> {
    const { clock, settings, logger } = this.options;
    let error: string | null = null;
    let retry = true;
    try {
      if (m.body_sealed === null) {
        // Only a message already given up or sent has no body; nothing can be sent again.
        error = 'the message body is gone';
        retry = false;
      } else {
        const body = JSON.parse(this.options.secrets.decrypt(m.body_sealed)) as MailBody;
        const send = () => this.options.transport.send({ id: m.id, to: m.recipient, subject: m.subject, text: body.text, html: body.html });
        await (tracing ? tracing.inJobSpan('mail.send', m.trace_context, { 'mail.message.id': m.id, 'mail.kind': m.kind }, send) : send());
      }
    } catch (err) {
      error = err instanceof SendFailure ? err.message : 'the message could not be sent';
      if (!(err instanceof SendFailure)) logger.error({ err, messageId: m.id }, 'mail could not be prepared');
    }
    const finished = clock.now();
    const exhausted = !retry || m.attempts >= settings.maxAttempts;
    metrics?.mailAttempts.inc({ outcome: error === null ? 'sent' : exhausted ? 'failed' : 'retrying' });
    this.outcomes.push({
      id: m.id,
      token: m.lease_token,
      status: error === null ? 'sent' : exhausted ? 'failed' : 'pending',
      error,
      next: error === null || exhausted ? null : new Date(finished.getTime() + retryDelayMs(m.attempts)),
      finished,
    });
    if (error !== null) logger.warn({ messageId: m.id, kind: m.kind, attempt: m.attempts, error, givenUp: exhausted }, 'mail delivery failed');
  }

  async flush(): Promise<void> {
    if (this.outcomes.length === 0) return;
    const batch = this.outcomes;
    this.outcomes = [];
    await recordMailOutcomes(this.options.db, batch);
  }

  close(): void {
    this.options.transport.close();
  }
}

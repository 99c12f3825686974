import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema';
import type { Clock } from '../lib/clock';
import type { SecretBox } from '../lib/crypto';
import type { Outbound } from '../outbound';
import type { Settings } from '../settings';
import { MailMessages } from '../mail/sending';
import { createMailTransport, type MailTransport } from '../mail/transport';
import { WebhookDeliveries } from '../webhooks/delivery-job';
import { AuditCheckpoints } from '../audit/checkpoint-job';
import { AuditStreamDeliveries } from '../audit-streams/delivery-job';
import { OrganizationLifecycle } from '../org/lifecycle-job';
import { OrganizationExports } from '../exports/job';
import { oauthUpkeep } from '../oauth/upkeep';
import { JobRunner, type JobKind } from './runner';
import { listenForJobs } from './wakeup';

export { JobRunner } from './runner';

/**
 * Settings of the job runner's own connections (src/main.ts): every statement is planned for the
 * tables as they are when it runs. The queue tables swing from empty to thousands of rows within
 * seconds, faster than autovacuum analyzes them, and the generic plan Postgres keeps for a
 * prepared statement after five runs is made from the statistics of that moment: planned while
 * the queue was empty, a claim read the whole queue on every pass until the next ANALYZE (a
 * burst of 10,000 deliveries drained at half speed; test/api/webhook-claim.test.ts). A custom
 * plan sees the table's current size; planning costs about a millisecond of Postgres's time per
 * claim, a few per second when idle. Requests keep the default: their tables do not swing so.
 */
export const JOB_SESSION_SETTINGS = { plan_cache_mode: 'force_custom_plan' } as const;

export interface JobRunnerSetup {
  db: Kysely<DB>;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  outbound: Outbound;
  settings: Pick<Settings, 'webhooks' | 'mail' | 'audit' | 'publicBaseUrl' | 'orgLifecycle' | 'rateLimits'>;
  /** Which kinds this runner takes (WEBHOOK_DISPATCH, MAIL_DISPATCH, AUDIT_DISPATCH, ORG_LIFECYCLE_DISPATCH in the service). */
  kinds: { webhooks: boolean; mail: boolean; audit?: boolean; lifecycle?: boolean };
  /** A server database's URL: the runner LISTENs there for committed jobs; without one it polls. */
  listenUrl?: string;
  /** The mail transport (built from settings.mail when not given). */
  mailTransport?: MailTransport;
}

/** The job runner of a process (main.ts) or a test, with the kinds asked for. */
export function createJobRunner(setup: JobRunnerSetup): JobRunner {
  const { db, clock, logger, secrets, settings, listenUrl } = setup;
  const kinds: JobKind[] = [];
  if (setup.kinds.webhooks) kinds.push(new WebhookDeliveries({ db, clock, logger, secrets, outbound: setup.outbound, settings: settings.webhooks }));
  if (setup.kinds.mail) kinds.push(new MailMessages({ db, clock, logger, secrets, settings: settings.mail, transport: setup.mailTransport ?? createMailTransport(settings.mail) }));
  if (setup.kinds.audit) {
    kinds.push(new AuditCheckpoints({ db, clock, logger, secrets, publicBaseUrl: settings.publicBaseUrl, settings: settings.audit }));
    kinds.push(new AuditStreamDeliveries({ db, clock, logger, secrets, outbound: setup.outbound, timeoutMs: settings.audit.streamTimeoutMs }));
  }
  if (setup.kinds.lifecycle) {
    kinds.push(new OrganizationLifecycle({ db, clock, logger, secrets, settings }));
    kinds.push(new OrganizationExports({ db, clock, logger, secrets, publicBaseUrl: settings.publicBaseUrl, settings }));
  }
  // Every runner with work prunes what the authorization server left expired: deleting is idempotent,
  // so replicas doing it at once only repeat a cheap statement.
  return new JobRunner({ clock, logger, kinds, upkeep: [oauthUpkeep(db)], wakeups: listenUrl ? (channels, wake) => listenForJobs(listenUrl, channels, wake, logger) : undefined });
}

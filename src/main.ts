import { loadSettings, SettingsError } from './settings';
import { openDatabase, resolveSecretKey } from './db/open';
import { migrateToLatest } from './db/migrate';
import { createApp } from './app';
import { createAppServer } from './http/server';
import { createLogger } from './http/logging';
import { systemClock } from './lib/clock';
import { SecretBox } from './lib/crypto';
import { createJobRunner } from './jobs';
import { createMailTransport } from './mail/transport';
import { createOutbound } from './outbound';
import { startAuditRetention } from './audit/retention';
import { connectServer } from './db/connect';

/** The job runner runs one statement at a time (claim, record outcomes, maintenance); two leave room for a reconnect. */
const JOB_POOL_MAX = 2;

/** settings → database → migrations → app → listen → graceful shutdown. */
async function main(): Promise<void> {
  let settings;
  try {
    settings = loadSettings();
  } catch (err) {
    if (err instanceof SettingsError) {
      console.error(`Invalid setting: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(settings.logLevel);
  const secretKey = await resolveSecretKey(settings);
  const database = await openDatabase(settings);
  const applied = await migrateToLatest(database.db);
  logger.info({ database: database.kind, applied }, 'migrations applied');

  const app = createApp({ db: database.db, clock: systemClock, logger, fetch: globalThis.fetch, settings: { ...settings, secretKey } });
  const server = createAppServer(app, {}, { requestTimeoutMs: settings.requestTimeoutMs, headersTimeoutMs: settings.headersTimeoutMs });
  server.listen(settings.port, () => logger.info({ port: settings.port, database: database.kind }, 'listening'));
  // Webhook deliveries and mail are sent beside the requests, from the database, by one job runner
  // (src/jobs/). On a server database it has connections of its own, so requests queueing for the
  // pool (writes waiting on an organization's audit chain head) never hold it back and it never
  // holds them up, and it is woken by LISTEN/NOTIFY when jobs are committed; the embedded database
  // has one connection and one process, so there it shares the connection and polls.
  const kinds = { webhooks: settings.webhooks.dispatch, mail: settings.mail.dispatch };
  const runsJobs = kinds.webhooks || kinds.mail;
  const jobDatabase = settings.databaseUrl && runsJobs ? connectServer(settings.databaseUrl, { max: JOB_POOL_MAX }) : null;
  const mailTransport = createMailTransport(settings.mail);
  // Where mail goes (SMTP host and port, or the folder of .eml files); never SMTP_URL itself.
  logger.info({ mail: mailTransport.destination, sending: kinds.mail }, 'mail delivery');
  const runner = createJobRunner({
    db: jobDatabase?.db ?? database.db,
    clock: systemClock,
    logger,
    secrets: new SecretBox(secretKey),
    outbound: createOutbound({ allowedNetworks: settings.outboundAllowedNetworks }),
    settings,
    kinds,
    listenUrl: settings.databaseUrl,
    mailTransport,
  });
  runner.start();
  const stopRetention = startAuditRetention({ db: database.db, clock: systemClock, logger, retentionDays: settings.auditRetentionDays });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    stopRetention();
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    // Stop accepting; idle keep-alive sockets are closed so in-flight requests are all we wait for.
    server.close(async () => {
      await runner.stop();
      await jobDatabase?.close();
      await database.close();
      logger.info('stopped');
      process.exit(0);
    });
    server.closeIdleConnections();
    setTimeout(() => {
      logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, 25_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

// First: starts OpenTelemetry when OTEL_* asks for traces, before http and pg are loaded.
import { tracing } from './observability/start-tracing';
import { loadSettings, SettingsError } from './settings';
import { openDatabase, resolveSecretKey } from './db/open';
import { migrateToLatest } from './db/migrate';
import { createApp } from './server/app';
import { createAppServer } from './server/server';
import { createLogger } from './server/logging';
import { systemClock } from './lib/clock';
import { SecretBox } from './lib/crypto';
import { createJobRunner, JOB_SESSION_SETTINGS } from './jobs';
import { createMailTransport } from './mail/transport';
import { createOutbound } from './outbound';
import { startAuditRetention } from './audit/retention';
import { auditKey } from './audit/signing-key';
import { connectServer } from './db/connect';
import { enableMetrics, addScrapeGauges } from './observability/metrics';
import { startMetricsServer } from './observability/metrics-server';
import { processGauges } from './observability/outbox';
import { markShuttingDown } from './system/lifecycle';
import { settleResetWork } from './auth/passwords';

/** The job runner runs one statement at a time (claim, record outcomes, maintenance); two leave room for a reconnect. */
const JOB_POOL_MAX = 2;

/**
 * Start-up (the contract parsed and dereferenced, every request validator compiled) leaves most of
 * a ~115 MB heap as garbage, and V8 sizes the old generation to it; a process under steady load
 * keeps that size, as resident memory. One full collection once the router is ready returns it
 * before the first requests are served. `gc` exists because the start command passes --expose-gc
 * (package.json, Dockerfile; docs/settings.md); without the flag this does nothing.
 */
function collectStartupGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return;
  // The first collection frees the objects; the pages they held are handed back by the next one.
  gc();
  setImmediate(gc);
}

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
  // Before the database opens: its statement timer is set when it is made (src/db/connect.ts).
  const metrics = settings.metricsPort === undefined ? null : enableMetrics();
  const secretKey = await resolveSecretKey(settings);
  const database = await openDatabase(settings);
  const applied = await migrateToLatest(database.db);
  logger.info({ database: database.kind, applied }, 'migrations applied');
  // The audit key is made by the first process that starts (replicas read the same row), so the
  // key published at /.well-known/audit-key exists before the first request asks for it.
  await auditKey({ db: database.db, secrets: new SecretBox(secretKey), clock: systemClock, publicBaseUrl: settings.publicBaseUrl });

  const app = createApp({ db: database.db, clock: systemClock, logger, fetch: globalThis.fetch, settings: { ...settings, secretKey }, onReady: collectStartupGarbage });
  const timeouts = { requestTimeoutMs: settings.requestTimeoutMs, headersTimeoutMs: settings.headersTimeoutMs };
  const server = createAppServer(app, {}, timeouts);
  server.listen(settings.port, settings.host, () => {
    const base = `http://localhost:${settings.port}`;
    logger.info({ host: settings.host, port: settings.port, database: database.kind }, `listening on ${base}, docs at ${base}/docs`);
  });
  // Webhook deliveries, mail, audit checkpoints, audit streams and organization deletion (notices, purge) are done beside the requests, from the database, by one job runner
  // (src/jobs/). On a server database it has connections of its own, so requests queueing for the
  // pool (writes waiting on an organization's audit chain head) never hold it back and it never
  // holds them up, and it is woken by LISTEN/NOTIFY when jobs are committed; the embedded database
  // has one connection and one process, so there it shares the connection and polls.
  const kinds = { webhooks: settings.webhooks.dispatch, mail: settings.mail.dispatch, audit: settings.audit.dispatch, lifecycle: settings.orgLifecycle.dispatch };
  const runsJobs = kinds.webhooks || kinds.mail || kinds.audit || kinds.lifecycle;
  const jobDatabase = settings.databaseUrl && runsJobs ? connectServer(settings.databaseUrl, { max: JOB_POOL_MAX, sessionSettings: JOB_SESSION_SETTINGS }) : null;
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
  let metricsServer: import('node:http').Server | null = null;
  if (metrics && settings.metricsPort !== undefined) {
    addScrapeGauges(processGauges(database.db, () => systemClock.now(), database.poolStats));
    metricsServer = await startMetricsServer(metrics, { port: settings.metricsPort, host: settings.metricsHost, logger, timeouts });
    logger.info({ port: settings.metricsPort, host: settings.metricsHost }, 'metrics listening');
  }
  const stopRetention = startAuditRetention({ db: database.db, clock: systemClock, logger, retentionDays: settings.auditRetentionDays });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    // /ready answers 503 from now on, so a balancer sends new requests elsewhere.
    markShuttingDown();
    stopRetention();
    logger.info({ signal, timeoutMs: settings.shutdownTimeoutMs }, 'shutting down: finishing in-flight requests and jobs');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs: settings.shutdownTimeoutMs }, 'shutdown timed out; exiting');
      process.exit(1);
    }, settings.shutdownTimeoutMs);
    timer.unref();
    // Stop accepting; idle keep-alive sockets are closed so in-flight requests are all we wait for.
    // The job runner stops claiming at once; its jobs in flight finish and their outcomes (which
    // release the leases) are written before the database closes.
    const requestsDone = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    Promise.all([requestsDone, runner.stop()])
      // Reset requests answered just before the stop queue their message after the reply.
      .then(() => settleResetWork())
      .then(async () => {
        metricsServer?.close();
        await jobDatabase?.close();
        await database.close();
        await tracing?.shutdown();
        logger.info('stopped');
        process.exit(0);
      })
      .catch((err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

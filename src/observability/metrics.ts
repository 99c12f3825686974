import type * as Prom from 'prom-client';

/**
 * The process's Prometheus metrics (docs/running-the-service.md lists what each means). Off unless
 * METRICS_PORT is set: then `enableMetrics` loads prom-client and fills `metrics`; every place that
 * records one writes `metrics?.x.inc(…)`, so with metrics off a request pays one null check and
 * the library is never loaded.
 *
 * Names follow the OpenTelemetry semantic conventions as Prometheus renders them
 * (`http.server.request.duration` in seconds → `http_server_request_duration_seconds`). Labels
 * take values from small fixed sets only (route templates, operation ids, methods, statuses, named
 * outcomes): never a tenant or user id, e-mail, token or URL, so the series count stays bounded
 * whatever the traffic (test/observability/metrics.test.ts sends a thousand distinct ids).
 */
export interface Metrics {
  registry: Prom.Registry;
  httpDuration: Prom.Histogram<'http_request_method' | 'http_route' | 'http_response_status_code' | 'operation_id'>;
  dbDuration: Prom.Histogram<'db_operation_name'>;
  signIns: Prom.Counter<'outcome'>;
  rateLimitRejections: Prom.Counter<'limit'>;
  outboundRefused: Prom.Counter<'reason'>;
  auditChainWait: Prom.Histogram;
  webhookAttempts: Prom.Counter<'outcome'>;
  mailAttempts: Prom.Counter<'outcome'>;
}

/** The metrics of this process, or null while they are off. */
export let metrics: Metrics | null = null;

/** The `http_route` of a request no operation of the spec matched (404s of unknown paths, /docs). */
export const UNMATCHED_ROUTE = 'unmatched';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
/** OpenTelemetry's `http.request.method`: a known method, else `_OTHER`. */
export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : '_OTHER';
}

/** Request latencies: OpenTelemetry's advised boundaries for http.server.request.duration. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const DB_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A gauge whose value is read when Prometheus scrapes (pool sizes, outbox backlogs). */
export interface ScrapeGauge {
  name: string;
  help: string;
  labelNames?: string[];
  collect(): Promise<Array<{ labels?: Record<string, string>; value: number }>> | Array<{ labels?: Record<string, string>; value: number }>;
}

/** Turns metrics on for this process (idempotent); tests call it before creating their app. */
export function enableMetrics(): Metrics {
  if (metrics) return metrics;
  // Loaded here, not at start: a process without METRICS_PORT never holds prom-client.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const prom = require('prom-client') as typeof Prom;
  const registry = new prom.Registry();
  prom.collectDefaultMetrics({ register: registry });
  const registers = [registry];
  metrics = {
    registry,
    httpDuration: new prom.Histogram({
      name: 'http_server_request_duration_seconds',
      help: 'Duration of HTTP server requests (OpenTelemetry http.server.request.duration).',
      labelNames: ['http_request_method', 'http_route', 'http_response_status_code', 'operation_id'],
      buckets: HTTP_BUCKETS,
      registers,
    }),
    dbDuration: new prom.Histogram({
      name: 'db_client_operation_duration_seconds',
      help: 'Duration of database statements, by prepared statement name or SQL kind (OpenTelemetry db.client.operation.duration).',
      labelNames: ['db_operation_name'],
      buckets: DB_BUCKETS,
      registers,
    }),
    signIns: new prom.Counter({
      name: 'auth_sign_in_attempts_total',
      help: 'Password sign-in attempts by outcome: success, invalid, rate_limited, mfa_required.',
      labelNames: ['outcome'],
      registers,
    }),
    rateLimitRejections: new prom.Counter({
      name: 'rate_limit_rejections_total',
      help: 'Requests refused with 429 by a rate limit, by limit name.',
      labelNames: ['limit'],
      registers,
    }),
    outboundRefused: new prom.Counter({
      name: 'outbound_requests_refused_total',
      help: 'Outbound calls to tenant-supplied URLs refused by the egress policy, by reason.',
      labelNames: ['reason'],
      registers,
    }),
    auditChainWait: new prom.Histogram({
      name: 'audit_chain_lock_wait_seconds',
      help: "Duration of the statement that moves an organization's audit chain head (its wait for the head's row lock included).",
      buckets: DB_BUCKETS,
      registers,
    }),
    webhookAttempts: new prom.Counter({
      name: 'webhook_delivery_attempts_total',
      help: 'Webhook delivery attempts by outcome: succeeded, retrying, failed.',
      labelNames: ['outcome'],
      registers,
    }),
    mailAttempts: new prom.Counter({
      name: 'mail_send_attempts_total',
      help: 'Mail send attempts by outcome: sent, retrying, failed.',
      labelNames: ['outcome'],
      registers,
    }),
  };
  return metrics;
}

/** Adds gauges read at scrape time (main.ts: connection pools, outbox backlogs). */
export function addScrapeGauges(gauges: ScrapeGauge[]): void {
  if (!metrics) return;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const prom = require('prom-client') as typeof Prom;
  for (const g of gauges) {
    if (metrics.registry.getSingleMetric(g.name)) continue;
    new prom.Gauge({
      name: g.name,
      help: g.help,
      labelNames: g.labelNames ?? [],
      registers: [metrics.registry],
      async collect() {
        this.reset();
        for (const { labels, value } of await g.collect()) {
          if (labels) this.set(labels, value);
          else this.set(value);
        }
      },
    });
  }
}

const SQL_KIND = /^\s*(?:\/\*[^]*?\*\/\s*)?([A-Za-z]+)/;
const PREPARED = /\/\* prepared:(\w{1,60}) \*\//;
const KINDS = new Set(['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'WITH', 'BEGIN', 'COMMIT', 'ROLLBACK', 'LISTEN', 'NOTIFY', 'SET']);

/** A statement's label: its prepared name (src/db/named-statements.ts), else its SQL kind; never its text. */
export function statementLabel(text: string): string {
  const name = PREPARED.exec(text.slice(0, 120))?.[1];
  if (name) return name;
  const kind = SQL_KIND.exec(text)?.[1]?.toUpperCase() ?? '';
  return KINDS.has(kind) ? kind : 'OTHER';
}

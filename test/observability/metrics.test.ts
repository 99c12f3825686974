import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, PASSWORD, type OrgOwner } from '../support/factories';
import { addScrapeGauges, enableMetrics } from '../../src/observability/metrics';
import { startMetricsServer } from '../../src/observability/metrics-server';
import { processGauges } from '../../src/observability/outbox';
import { loadSettings, SettingsError } from '../../src/settings';

/**
 * GET /metrics (docs/running-the-service.md#metrics): on its own listener, OpenTelemetry-convention names, route
 * templates rather than paths, and a series count that does not grow with distinct ids, paths,
 * e-mails or request ids.
 */
describe('Prometheus metrics', () => {
  let t: TestApp;
  let owner: OrgOwner;
  let server: Server;
  let metricsUrl: string;

  beforeAll(async () => {
    // Before the database is made: its statement timer is set at connect time.
    const m = enableMetrics();
    t = await createTestApp();
    addScrapeGauges(processGauges(t.db, () => t.clock.now(), t.database.poolStats));
    server = await startMetricsServer(m, { port: 0, host: '127.0.0.1', logger: pino({ level: 'silent' }), timeouts: { requestTimeoutMs: 30_000, headersTimeoutMs: 10_000 } });
    metricsUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    owner = await createOrganization(t, 'Metrics');
  }, 240_000);
  afterAll(async () => {
    server?.close();
    await t?.close();
  });

  const scrape = async (): Promise<string> => {
    const res = await fetch(metricsUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return res.text();
  };
  /** Every sample line: one series each. */
  const series = (text: string) => text.split('\n').filter((line) => line && !line.startsWith('#'));
  const value = (text: string, prefix: string): number => {
    const line = series(text).find((l) => l.startsWith(prefix));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
  };

  it('serves request durations by route template and operation, database statements, outbox gauges and process metrics', async () => {
    const team = await t.http.post('/v1/teams').set(...bearer(owner.token)).send({ name: 'Platform' });
    expect(team.status).toBe(201);
    const got = await t.http.get(`/v1/teams/${team.body.item.id}`).set(...bearer(owner.token));
    expect(got.status).toBe(200);
    const text = await scrape();
    expect(text).toContain('# TYPE http_server_request_duration_seconds histogram');
    expect(value(text, 'http_server_request_duration_seconds_count{http_request_method="GET",http_route="/v1/teams/{teamId}",http_response_status_code="200",operation_id="getTeam"}')).toBe(1);
    expect(value(text, 'http_server_request_duration_seconds_count{http_request_method="POST",http_route="/v1/teams",http_response_status_code="201",operation_id="createTeam"}')).toBe(1);
    // The raw path with its id never becomes a label.
    expect(text).not.toContain(team.body.item.id);
    expect(text).not.toContain(owner.organizationId);
    expect(value(text, 'db_client_operation_duration_seconds_count{db_operation_name="audit_record"}')).toBeGreaterThan(0);
    expect(value(text, 'audit_chain_lock_wait_seconds_count')).toBeGreaterThan(0);
    expect(text).toMatch(/^webhook_deliveries_pending \d+$/m);
    expect(text).toMatch(/^webhook_delivery_oldest_pending_age_seconds [\d.]+$/m);
    expect(text).toMatch(/^mail_messages_pending \d+$/m);
    expect(text).toMatch(/^mail_message_oldest_pending_age_seconds [\d.e+-]+$/m);
    // prom-client's default process metrics: CPU, memory, event-loop lag, GC.
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_gc_duration_seconds']) {
      expect(text).toContain(`# TYPE ${name} `);
    }
  });

  it('counts sign-in outcomes and rate-limit rejections', async () => {
    const before = await scrape();
    const ok = await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: PASSWORD });
    const bad = await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: 'wrong password entirely' });
    expect(bad.status).toBe(401);
    const after = await scrape();
    const delta = (name: string) => value(after, name) - value(before, name);
    expect(delta('auth_sign_in_attempts_total{outcome="invalid"}')).toBe(1);
    expect(delta('auth_sign_in_attempts_total{outcome="success"}')).toBe(ok.status === 200 ? 1 : 0);
    // Ten failures per e-mail per 15 minutes (the default), then 429.
    let limited = 0;
    for (let i = 0; i < 12; i++) {
      const res = await t.http.post('/v1/auth/sign-in').send({ email: owner.email, password: `wrong password ${i}` });
      if (res.status === 429) limited++;
    }
    expect(limited).toBeGreaterThan(0);
    const last = await scrape();
    expect(value(last, 'auth_sign_in_attempts_total{outcome="rate_limited"}')).toBe(limited);
    expect(value(last, 'rate_limit_rejections_total{limit="signInEmail"}')).toBe(limited);
    expect(last).not.toContain(owner.email);
  });

  it('keeps the series count when a thousand distinct ids, paths, e-mails and request ids arrive', async () => {
    // Each request a different id, path, query, e-mail or request id; four shapes in turn.
    const request = (i: number) => {
      const n = String(i).padStart(4, '0');
      switch (i % 4) {
        case 0:
          return t.http.get(`/v1/teams/tem_01jz000000000000000000${n}`).set(...bearer(owner.token)).set('x-request-id', `req-${n}`);
        case 1:
          return t.http.get(`/v1/no-such-thing/${n}?token=secret-${n}`);
        case 2:
          return t.http.get(`/v1/teams?cursor=c${n}`).set(...bearer(owner.token));
        default:
          return t.http.post('/v1/auth/sign-in').send({ email: `nobody-${n}@example.test`, password: 'not the password' });
      }
    };
    const round = (from: number) => Promise.all([0, 1, 2, 3].map((k) => request(from + k)));
    // Once of each shape first, so every series they can make exists.
    await round(0);
    // The series traffic labels (prom-client's process metrics gain GC kinds as collections
    // happen, and a statement kind appears when a sweep first runs: checked below on their own).
    const own = (text: string) => series(text).filter((l) => !/^(process|nodejs|db_client)_/.test(l)).map((l) => l.slice(0, l.lastIndexOf(' ')));
    const before = own(await scrape());
    for (let i = 4; i < 1004; i += 40) await Promise.all(Array.from({ length: 40 }, (_, k) => request(i + k)));
    const text = await scrape();
    const after = own(text);
    expect(after.filter((l) => !before.includes(l))).toEqual([]);
    expect(after.length).toBe(before.length);
    expect(new Set(after)).toEqual(new Set(before));
    expect(text).toContain('http_route="unmatched"');
    // Statements are labelled by prepared name or SQL kind: a set fixed by the code.
    const names = new Set([...text.matchAll(/db_operation_name="([^"]*)"/g)].map((m) => m[1]!));
    for (const name of names) expect(name).toMatch(/^(SELECT|INSERT|UPDATE|DELETE|WITH|BEGIN|COMMIT|ROLLBACK|LISTEN|NOTIFY|SET|OTHER|[a-z][a-z0-9_]*)$/);
    expect(names.size).toBeLessThan(60);
    expect(text).not.toMatch(/nobody-|no-such-thing|secret-|req-0/);
  }, 120_000);

  it('is served only on its own listener: the API port has no /metrics', async () => {
    expect((await t.http.get('/metrics')).status).toBe(404);
    expect((await fetch(metricsUrl.replace('/metrics', '/other'))).status).toBe(404);
  });

  it('METRICS_PORT is off when unset, refused when it is the API port or not a port', () => {
    expect(loadSettings({}).metricsPort).toBeUndefined();
    expect(loadSettings({ METRICS_PORT: '9464' }).metricsPort).toBe(9464);
    expect(loadSettings({}).metricsHost).toBe('127.0.0.1');
    expect(() => loadSettings({ PORT: '3000', METRICS_PORT: '3000' })).toThrow(SettingsError);
    expect(() => loadSettings({ METRICS_PORT: 'x' })).toThrow(/METRICS_PORT/);
  });
});

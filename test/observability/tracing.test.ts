import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { LOCAL_FAKES } from '../support/app';
import { testDbKind } from '../support/env';
import { PASSWORD, uniqueEmail } from '../support/factories';
import { adminSql, call, startService, type ServiceProcess } from '../support/service-process';

/**
 * Traces (docs/running-the-service.md#traces) from the real service process with the OpenTelemetry SDK on, exported
 * by its OTLP/HTTP exporter (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) to a receiver on 127.0.0.1
 * that decodes what the exporter sends. A write that produces a webhook, sent with a W3C
 * traceparent, gives one trace: the caller's span → the request span (named by route template) →
 * its SQL statements, and → the later delivery span → the outbound POST, whose traceparent the
 * webhook receiver gets. Server database only (the process is the same on either).
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

/** OTLP JSON → spans with plain attribute values. */
function decode(body: unknown): Span[] {
  const value = (v: Record<string, unknown>): unknown => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue;
  const out: Span[] = [];
  for (const rs of (body as { resourceSpans?: { scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] }).resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const attributes: Record<string, unknown> = {};
        for (const a of (s.attributes as { key: string; value: Record<string, unknown> }[]) ?? []) attributes[a.key] = value(a.value);
        out.push({ traceId: s.traceId as string, spanId: s.spanId as string, parentSpanId: (s.parentSpanId as string) || undefined, name: s.name as string, kind: s.kind as number, attributes });
      }
    }
  }
  return out;
}

maybe('OpenTelemetry traces', () => {
  const database = `cp_trace_${randomBytes(5).toString('hex')}`;
  const spans: Span[] = [];
  const exports: string[] = [];
  const deliveries: { traceparent?: string }[] = [];
  let service: ServiceProcess;
  let collector: http.Server;
  let receiver: http.Server;

  const listen = (server: http.Server) => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

  beforeAll(async () => {
    collector = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        exports.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        spans.push(...decode(JSON.parse(text)));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        deliveries.push({ traceparent: req.headers.traceparent as string | undefined });
        res.writeHead(204).end();
      });
    });
    const [collectorPort] = await Promise.all([listen(collector), listen(receiver), adminSql(`CREATE DATABASE ${database}`)]);
    service = await startService(database, {
      ...LOCAL_FAKES,
      // The traced user acts right after signing up (verification is tested in verify-email.test.ts).
      EMAIL_VERIFICATION: 'optional',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      LOG_LEVEL: 'info',
    });
  }, 120_000);

  afterAll(async () => {
    await service?.kill();
    collector?.close();
    receiver?.close();
    await adminSql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  const waitFor = async <T>(what: string, find: () => T | undefined): Promise<T> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; spans: ${JSON.stringify(spans.filter((s) => !s.name.startsWith('pg')))}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('links a webhook-producing write: caller → request → SQL, and → the delivery → its POST', async () => {
    const url = service.url;
    const signUp = await call(url, 'POST', '/v1/auth/sign-up', { email: uniqueEmail('trace'), password: PASSWORD, name: 'Trace' });
    expect(signUp.status).toBe(201);
    const token = signUp.body.session.token as string;
    const org = await call(url, 'POST', '/v1/org', { name: 'Traced' }, token);
    expect(org.status).toBe(201);
    const hook = await call(url, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks?key=s3cret`, events: ['team.created'] }, token);
    expect(hook.status).toBe(201);

    // The caller's own trace context (W3C traceparent in).
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const res = await fetch(`${url}/v1/teams?ignored=tok123`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ name: 'Platform' }),
    });
    expect(res.status).toBe(400); // an unknown query parameter: still a traced request
    const created = await fetch(`${url}/v1/teams`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${callerSpan}-01` },
      body: JSON.stringify({ name: 'Platform' }),
    });
    expect(created.status).toBe(201);

    const delivered = await waitFor('the webhook delivery', () => deliveries.find((d) => d.traceparent?.includes(traceId)));
    const inTrace = () => spans.filter((s) => s.traceId === traceId);
    const request = await waitFor('the request span', () => inTrace().find((s) => s.name === 'POST /v1/teams' && s.attributes['http.response.status_code'] === 201));
    // The request span is the caller's child, named by the route template, with operation and organization.
    expect(request.parentSpanId).toBe(callerSpan);
    expect(request.kind).toBe(2); // SERVER
    expect(request.attributes).toMatchObject({ 'http.route': '/v1/teams', operation_id: 'createTeam', 'org.id': org.body.item.id });

    const childrenOf = (id: string) => inTrace().filter((s) => s.parentSpanId === id);
    const descendants = (id: string): Span[] => childrenOf(id).flatMap((c) => [c, ...descendants(c.spanId)]);
    // Its SQL: pg spans below the request span (the team's one statement, audit entry and event included).
    const sqlSpans = descendants(request.spanId).filter((s) => s.attributes['db.system.name'] === 'postgresql' && s.name.startsWith('pg.query'));
    expect(sqlSpans.length).toBeGreaterThan(0);
    expect(sqlSpans.some((s) => s.attributes['db.postgresql.plan'] === 'create_team_audited')).toBe(true);

    // Later, from the job runner: the delivery span, the request's child, and its outbound POST.
    const delivery = await waitFor('the delivery span', () => inTrace().find((s) => s.name === 'webhook.deliver'));
    expect(delivery.parentSpanId).toBe(request.spanId);
    expect(delivery.attributes).toMatchObject({ 'webhook.event.type': 'team.created', 'org.id': org.body.item.id });
    const post = await waitFor('the outbound POST span', () => childrenOf(delivery.spanId).find((s) => s.kind === 3)); // CLIENT
    expect(post.name).toBe('POST');
    // The receiver got the POST span's context (W3C traceparent out).
    expect(delivered.traceparent).toBe(`00-${traceId}-${post.spanId}-01`);

    // No query strings, header values or secrets in any attribute.
    const everything = JSON.stringify(spans);
    expect(everything).not.toContain('s3cret');
    expect(everything).not.toContain('tok123');
    expect(everything).not.toContain(token);
    // The request's log line carries its trace and span ids.
    const line = await waitFor('the request log line', () =>
      service.stdout().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.route === 'POST /v1/teams' && (l.res as { status: number }).status === 201),
    );
    expect(line).toMatchObject({ trace_id: traceId, span_id: request.spanId });
    expect(exports[0]).toMatch(/^POST \/v1\/traces application\/json/);
  });
});

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { parse } from 'yaml';
import { LOCAL_FAKES } from '../support/app';
import { compose, composeEnvironment } from '../support/deploy';
import { testDbKind } from '../support/env';
import { PASSWORD, uniqueEmail } from '../support/factories';
import { adminSql, call, freePort, startService, type ServiceProcess } from '../support/service-process';

/**
 * compose.yaml's wiring without containers (images cannot be pulled where CI runs): two service
 * processes with the replicas' environment from compose.yaml on one database, behind a
 * round-robin proxy as deploy/Caddyfile balances them. Both serve, every webhook is sent once,
 * each exposes its own metrics port as deploy/prometheus.yml scrapes it, and the Dockerfile's
 * HEALTHCHECK command passes against a replica. What differs from the containers, and why: the
 * database URL (the test's server instead of host `postgres`), the ports (two processes share one
 * host, so each gets free ones), and OUTBOUND_ALLOWED_NETWORKS (the webhook receiver is on
 * 127.0.0.1). The image's own environment and user: test/deploy/image-start.test.ts. Server
 * database only.
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;
const ROOT = path.resolve(__dirname, '..', '..');

maybe('compose.yaml wiring, without containers', () => {
  const database = `cp_compose_${randomBytes(5).toString('hex')}`;
  const replicas: { name: string; service: ServiceProcess; metricsPort: number }[] = [];
  const received: string[] = [];
  let receiver: http.Server;
  let proxy: http.Server;
  let proxyUrl: string;

  beforeAll(async () => {
    await adminSql(`CREATE DATABASE ${database}`);
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received.push(String(req.headers['webhook-id']));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    for (const name of ['api-1', 'api-2']) {
      const vars = { POSTGRES_PASSWORD: 'unused', SECRET_KEY: 'compose-wiring-secret-key-0123456789abcdef', BOOTSTRAP_TOKEN: 'compose-wiring-bootstrap-token' };
      const env = composeEnvironment(name, vars);
      const metricsPort = await freePort();
      // Host `postgres` and the ports are the containers'; here: the test's server and free ports.
      const { DATABASE_URL: _url, PORT: _port, ...rest } = env;
      // The test's user acts right after signing up: no mailbox here to verify the address through.
      const service = await startService(database, { ...rest, METRICS_PORT: String(metricsPort), EMAIL_VERIFICATION: 'optional', ...LOCAL_FAKES });
      replicas.push({ name, service, metricsPort });
    }
    // Round robin, as deploy/Caddyfile's lb_policy; one X-Forwarded-For hop (TRUST_PROXY=1).
    let next = 0;
    proxy = http.createServer((req, res) => {
      const target = replicas[next++ % replicas.length]!.service;
      const upstream = http.request({ host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers: { ...req.headers, 'x-forwarded-for': req.socket.remoteAddress ?? '' } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  }, 180_000);

  afterAll(async () => {
    proxy?.close();
    receiver?.close();
    await Promise.all(replicas.map((r) => r.service.kill()));
    await adminSql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  it('two replicas behind the proxy both serve, and every webhook is sent exactly once', async () => {
    const signUp = await call(proxyUrl, 'POST', '/v1/auth/sign-up', { email: uniqueEmail('compose'), password: PASSWORD, name: 'Compose' });
    expect(signUp.status).toBe(201);
    const token = signUp.body.session.token as string;
    expect((await call(proxyUrl, 'POST', '/v1/org', { name: 'Compose' }, token)).status).toBe(201);
    const hook = await call(proxyUrl, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`, events: ['team.created'] }, token);
    expect(hook.status).toBe(201);
    const teams = 20;
    for (let i = 0; i < teams; i++) expect((await call(proxyUrl, 'POST', '/v1/teams', { name: `Team ${i}` }, token)).status).toBe(201);

    const deadline = Date.now() + 20_000;
    while (received.length < teams && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500)); // a duplicate would arrive by now
    expect(received).toHaveLength(teams);
    expect(new Set(received).size).toBe(teams);

    // Each replica answered its share, as its own metrics port shows.
    for (const r of replicas) {
      const text = await (await fetch(`http://127.0.0.1:${r.metricsPort}/metrics`)).text();
      const served = /^http_server_request_duration_seconds_count\{[^}]*operation_id="createTeam"\} (\d+)$/m.exec(text);
      expect({ replica: r.name, served: Number(served?.[1] ?? 0) }).toEqual({ replica: r.name, served: teams / 2 });
    }
  });

  it("the Dockerfile's HEALTHCHECK command passes against a replica; the proxy and Prometheus configs name the replicas' ports", () => {
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM .* AS build$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    const check = /^\s*CMD (\[.*\])$/m.exec(dockerfile.slice(dockerfile.indexOf('HEALTHCHECK')));
    const argv = JSON.parse(check![1]!) as string[];
    expect(argv[0]).toBe('node');
    const run = (port: number) => {
      try {
        execFileSync(process.execPath, argv.slice(1), { env: { PORT: String(port) }, timeout: 10_000 });
        return 0;
      } catch (err) {
        return (err as { status: number }).status;
      }
    };
    expect(run(replicas[0]!.service.port)).toBe(0);
    expect(run(9)).toBe(1); // nothing listens there

    const api = compose.services['api-1']!;
    expect(api.expose).toEqual([api.environment!.PORT, api.environment!.METRICS_PORT]);
    const caddy = readFileSync(path.join(ROOT, 'deploy', 'Caddyfile'), 'utf8');
    expect(caddy).toContain(`reverse_proxy api-1:${api.environment!.PORT} api-2:${api.environment!.PORT}`);
    expect(caddy).toContain('health_uri /ready');
    const prometheus = parse(readFileSync(path.join(ROOT, 'deploy', 'prometheus.yml'), 'utf8')) as { scrape_configs: { static_configs: { targets: string[] }[] }[] };
    expect(prometheus.scrape_configs[0]!.static_configs[0]!.targets).toEqual(['api-1', 'api-2'].map((n) => `${n}:${api.environment!.METRICS_PORT}`));
  });
});

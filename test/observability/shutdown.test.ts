import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { LOCAL_FAKES } from '../support/app';
import { testDbKind } from '../support/env';
import { PASSWORD, uniqueEmail } from '../support/factories';
import { adminSql, call, startService, type ServiceProcess } from '../support/service-process';

/**
 * SHUTDOWN_TIMEOUT_MS (docs/running-the-service.md#what-runs): a request still in flight when it runs out does not hold
 * the process; it exits (status 1) at the bound. That in-flight requests finish within it and the
 * process exits 0 is test/hardening/process.test.ts. Server database only.
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;

maybe('SHUTDOWN_TIMEOUT_MS', () => {
  const database = `cp_stop_${randomBytes(5).toString('hex')}`;
  let service: ServiceProcess;
  let hits = 0;
  // A worker runtime that answers after 6 s: its request outlives the 1 s bound.
  const runtime = http.createServer((_req, res) => {
    hits++;
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"version":"1","status":"ok"}'), 6000);
  });

  beforeAll(async () => {
    await Promise.all([adminSql(`CREATE DATABASE ${database}`), new Promise<void>((r) => runtime.listen(0, '127.0.0.1', r))]);
    service = await startService(database, { EMAIL_VERIFICATION: 'optional', SHUTDOWN_TIMEOUT_MS: '1000', WORKER_RUNTIME_TIMEOUT_MS: '10000', ...LOCAL_FAKES });
  }, 120_000);
  afterAll(async () => {
    await service?.kill();
    runtime.closeAllConnections();
    await new Promise<void>((r) => runtime.close(() => r()));
    await adminSql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  it('exits at the bound, not when the in-flight request would have finished', async () => {
    const signUp = await call(service.url, 'POST', '/v1/auth/sign-up', { email: uniqueEmail('stop'), password: PASSWORD, name: 'Stop' });
    const token = signUp.body.session.token as string;
    expect((await call(service.url, 'POST', '/v1/org', { name: 'Stop' }, token)).status).toBe(201);
    const worker = await call(service.url, 'POST', '/v1/workers', { name: 'slow', runtimeUrl: `http://127.0.0.1:${(runtime.address() as AddressInfo).port}` }, token);
    expect(worker.status).toBe(201);
    const inFlight = call(service.url, 'GET', `/v1/workers/${worker.body.item.id}/runtime`, undefined, token).catch((err: Error) => err);
    const deadline = Date.now() + 10_000;
    while (hits < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(hits).toBe(1);

    const started = Date.now();
    const code = await service.stop();
    const elapsed = Date.now() - started;
    expect(code).toBe(1);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(4000);
    expect(service.stdout()).toContain('shutdown timed out');
    // Its connection went with the process.
    expect(await inFlight).toMatchObject({ message: 'fetch failed' });
  }, 60_000);
});

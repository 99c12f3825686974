import { spawn } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import express from 'express';
import pino from 'pino';
import request from 'supertest';
import { requestLogger } from './logging';

/** The request log (src/server/logging.ts): one line per request, and `req.log` bound to the request. */
describe('request log', () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const app = express();
  app.use(requestLogger(pino({ level: 'info' }, sink)));
  app.get('/ok', (_req, res) => {
    res.locals.route = 'GET /ok';
    res.json({ ok: true });
  });
  app.get('/fails', (req, res) => {
    req.log.warn({ detail: 'x' }, 'something went wrong');
    res.status(500).json({ error: 'internal_error' });
  });
  beforeEach(() => lines.splice(0));
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  it('writes one line per request with its id, method, path (no query), status and route', async () => {
    const res = await request(app).get('/ok?code=secret').set('x-request-id', 'abc-123');
    await settle();
    expect(res.headers['x-request-id']).toBe('abc-123');
    expect(lines).toEqual([
      expect.objectContaining({ level: 30, msg: 'request completed', req: { id: 'abc-123', method: 'GET', path: '/ok' }, res: { status: 200 }, route: 'GET /ok', responseTime: expect.any(Number) }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret');
  });

  it('makes a malformed x-request-id a new one', async () => {
    const res = await request(app).get('/ok').set('x-request-id', 'not valid!');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('binds req.log lines to the request, and logs a 500 as an error', async () => {
    const res = await request(app).get('/fails');
    await settle();
    const id = res.headers['x-request-id'];
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, msg: 'something went wrong', detail: 'x', req: { id, method: 'GET', path: '/fails' } }),
      expect.objectContaining({ level: 50, msg: 'request errored', req: { id, method: 'GET', path: '/fails' }, res: { status: 500 } }),
    ]);
  });
});

/**
 * The service's stdout destination (createLogger's default): every line logged before the process
 * exits arrives, in order. Run in a child process, since the destination is the process's own stdout.
 */
describe('the service logger on stdout', () => {
  /** Runs a script with the service's logger; resolves with its stdout lines, parsed, and its exit code. */
  function run(body: string): Promise<{ lines: Record<string, unknown>[]; code: number | null }> {
    const script = `const { createLogger } = require('./src/server/logging.ts'); const logger = createLogger('info'); ${body}`;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: path.resolve(__dirname, '..', '..'), stdio: ['ignore', 'pipe', 'inherit'] });
      const lines: Record<string, unknown>[] = [];
      let partial = '';
      child.stdout.on('data', (chunk: Buffer) => {
        const parts = (partial + chunk.toString('utf8')).split('\n');
        partial = parts.pop()!;
        for (const text of parts) lines.push(JSON.parse(text) as Record<string, unknown>);
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ lines, code }));
    });
  }

  it('writes every line, in order, by the time the process exits (process.exit included)', async () => {
    const { lines, code } = await run(`for (let i = 0; i < 500; i++) logger.info({ i }, 'line'); process.exit(3);`);
    expect(code).toBe(3);
    expect(lines.map((line) => line.i)).toEqual(Array.from({ length: 500 }, (_, i) => i));
  }, 30_000);
});

import { Writable } from 'node:stream';
import express from 'express';
import pino from 'pino';
import request from 'supertest';
import { requestLogger } from './logging';

/** The request log (src/http/logging.ts): one line per request, and `req.log` bound to the request. */
describe('request log', () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const app = express();
  app.use(requestLogger(pino({ level: 'info' }, sink), app.request));
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

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization } from '../support/factories';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ settings: { bodyLimitBytes: 2048 } });
});
afterAll(() => t.close());

describe('the HTTP layer', () => {
  it('serves health, readiness and the contract', async () => {
    expect((await t.http.get('/health')).body).toEqual({ status: 'ok' });
    expect((await t.http.get('/ready')).body).toEqual({ status: 'ok' });
    const json = await t.http.get('/openapi.json');
    expect(json.body.openapi).toBe('3.1.0');
    // The version label the product fixes (docs/api-conventions.md#versioning).
    expect(json.body.info.version).toBe('dev');
    expect(Object.keys(json.body.paths)).toContain('/v1/org');
    const yaml = await t.http.get('/openapi.yaml');
    expect(yaml.text).toContain('openapi: 3.1.0');
    const docs = await t.http.get('/docs/');
    expect(docs.status).toBe(200);
    expect(docs.text).toContain('swagger-ui');
    expect(docs.text).not.toMatch(/https?:\/\/(cdn|unpkg)/);
  });

  it('serves the contract at every spelling its routes match (the docs layer passes only what cannot be one)', async () => {
    for (const path of ['/openapi.json/', '/OpenAPI.JSON', '/OPENAPI.json/']) {
      const res = await t.http.get(path);
      expect([path, res.status, res.body.openapi]).toEqual([path, 200, '3.1.0']);
    }
    expect((await t.http.get('/OpenAPI.yaml/')).text).toContain('openapi: 3.1.0');
    const docs = await t.http.get('/DOCS/');
    expect(docs.status).toBe(200);
    expect(docs.text).toContain('swagger-ui');
    // Not docs routes: the API answers them.
    for (const path of ['/openapi.jsonx', '/docsx', '/v1/openapi.json']) expect((await t.http.get(path)).body.error).toBe('not_found');
  });

  it('/docs: a policy that lets only the page run, compressed and cached (docs/running-the-service.md#the-reference-page)', async () => {
    const server = http.createServer(t.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // Bytes as they travel (supertest would decompress them).
    const raw = (url: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: url, headers }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
          })
          .on('error', reject);
      });
    try {
      const page = await raw('/docs/', { 'accept-encoding': 'gzip' });
      expect(page.status).toBe(200);
      const policy = page.headers['content-security-policy']!;
      expect(policy).toMatch(/^default-src 'none'; script-src 'self'; style-src 'self' 'sha256-/);
      expect(policy).toContain("connect-src 'self'");
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
      expect(page.headers['cache-control']).toBe('no-cache');
      expect(gunzipSync(page.body).toString()).toContain('swagger-ui');
      expect((await raw('/docs/', { 'if-none-match': page.headers.etag! })).status).toBe(304);

      // Swagger UI's largest script: Brotli on the wire, the installed file once decompressed.
      const file = readFileSync(path.join(path.dirname(require.resolve('swagger-ui-dist/package.json', { paths: [path.dirname(require.resolve('swagger-ui-express'))] })), 'swagger-ui-bundle.js'));
      const bundle = await raw('/docs/swagger-ui-bundle.js', { 'accept-encoding': 'br, gzip' });
      expect(bundle.status).toBe(200);
      expect(bundle.headers['content-encoding']).toBe('br');
      expect(bundle.headers.vary).toMatch(/Accept-Encoding/i);
      expect(bundle.headers['cache-control']).toBe('public, max-age=86400');
      expect(bundle.body.length).toBeLessThan(file.length / 3);
      expect(brotliDecompressSync(bundle.body).equals(file)).toBe(true);
      const revalidated = await raw('/docs/swagger-ui-bundle.js', { 'accept-encoding': 'br', 'if-none-match': bundle.headers.etag! });
      expect([revalidated.status, revalidated.body.length]).toEqual([304, 0]);
      // The start script loads the contract from its route, not from a copy of it.
      const start = await raw('/docs/swagger-ui-init.js');
      expect(start.headers['cache-control']).toBe('no-cache');
      expect(start.body.toString()).toContain('"url": "../openapi.json"');
      expect(start.body.length).toBeLessThan(10_000);

      const contract = await raw('/openapi.json', { 'accept-encoding': 'gzip' });
      expect(contract.headers['content-encoding']).toBe('gzip');
      expect(JSON.parse(gunzipSync(contract.body).toString()).openapi).toBe('3.1.0');
      expect(contract.headers['cache-control']).toBe('no-cache');
      expect((await raw('/openapi.json', { 'if-none-match': contract.headers.etag! })).status).toBe(304);
      // The API's own answers are not compressed.
      const ready = await raw('/v1/bootstrap/status', { 'accept-encoding': 'gzip, br' });
      expect(ready.headers['content-encoding']).toBeUndefined();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('answers JSON errors for unknown routes and wrong methods', async () => {
    const unknown = await t.http.get('/v1/nothing-here');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
    const method = await t.http.put('/v1/org').send({});
    expect(method.status).toBe(405);
    expect(method.body.error).toBe('method_not_allowed');
  });

  it('answers malformed JSON, a wrong content type and an oversize body in JSON', async () => {
    const owner = await createOrganization(t);
    const malformed = await t.http.post('/v1/org').set(...bearer(owner.token)).set('content-type', 'application/json').send('{"name":');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error: 'invalid_request', details: [{ path: ['body'] }] });
    expect(malformed.text).not.toMatch(/at \w+ \(|node_modules/);
    const text = await t.http.post('/v1/org').set(...bearer(owner.token)).set('content-type', 'text/plain').send('name=x');
    expect(text.status).toBe(415);
    expect(text.body.error).toBe('unsupported_media_type');
    const big = await t.http.post('/v1/org').set(...bearer(owner.token)).send({ name: 'x'.repeat(5000) });
    expect(big.status).toBe(413);
    expect(big.body.error).toBe('payload_too_large');
  });

  it('names path parameters in validation errors', async () => {
    const owner = await createOrganization(t);
    const wrongPrefix = await t.http.get('/v1/marketplaces/cin_01h2xcejqtf2nbrexx3vqjhp41/access').set(...bearer(owner.token));
    expect(wrongPrefix.status).toBe(400);
    expect(wrongPrefix.body.details).toContainEqual(expect.objectContaining({ path: ['path', 'marketplaceId'] }));
    const wrongLength = await t.http.get('/v1/marketplaces/mkt_01h2xcejqtf2nbrexx3vqjhp4/access').set(...bearer(owner.token));
    expect(wrongLength.status).toBe(400);
    const badQuery = await t.http.get('/v1/marketplaces/mkt_01h2xcejqtf2nbrexx3vqjhp41/access?limit=1000').set(...bearer(owner.token));
    expect(badQuery.status).toBe(400);
    expect(badQuery.body.details).toContainEqual(expect.objectContaining({ path: ['query', 'limit'] }));
  });

  it('writes a JSON answer with its type, charset and length in bytes; a conditional GET of a versioned answer still gets 304', async () => {
    // Multi-byte characters: the length is counted in bytes, not characters (src/server/router.ts send).
    const owner = await createOrganization(t, 'Zürich ☃ 組織');
    const org = await t.http.get('/v1/org').set(...bearer(owner.token));
    expect(org.status).toBe(200);
    expect(org.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(Number(org.headers['content-length'])).toBe(Buffer.byteLength(org.text));
    expect(org.body.organization.name).toBe('Zürich ☃ 組織');
    // Templates carry an ETag: a request naming it is answered 304 without a body, as res.send does.
    const created = await t.http.post('/v1/templates').set(...bearer(owner.token)).send({ name: 'Setup', kind: 'worker', content: { image: 'node:20' } });
    expect(created.headers.etag).toBe('"1"');
    const path = `/v1/templates/${created.body.item.id}`;
    const unchanged = await t.http.get(path).set(...bearer(owner.token)).set('if-none-match', '"1"');
    expect([unchanged.status, unchanged.text]).toEqual([304, '']);
    const changed = await t.http.get(path).set(...bearer(owner.token)).set('if-none-match', '"0"');
    expect([changed.status, changed.body.item.version]).toEqual([200, 1]);
  });

  it('sets security headers and no x-powered-by', async () => {
    const res = await t.http.get('/health');
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it('logs one line per request without tokens', async () => {
    const owner = await createOrganization(t);
    expect((await t.http.get('/v1/org').set(...bearer(owner.token))).status).toBe(200);
    // Undeclared query parameters are refused like unknown body fields; either way never logged.
    expect((await t.http.get('/v1/org?secret=query-value').set(...bearer(owner.token))).status).toBe(400);
    const lines = t.logs.join('');
    expect(lines).toContain('"path":"/v1/org"');
    expect(lines).toContain('"route":"GET /v1/org"');
    expect(lines).toMatch(/"responseTime":\d+/);
    expect(lines).not.toContain(owner.token);
    expect(lines).not.toContain('query-value');
  });
});

import express from 'express';
import helmet from 'helmet';
import request from 'supertest';
import { helmetHeaders, securityHeaders } from '../../src/server/security-headers';

/**
 * The security headers are worked out once from helmet (src/server/security-headers.ts): a response
 * through that adapter carries exactly the headers a response through helmet itself carries.
 */
describe('security headers adapter', () => {
  const options = { contentSecurityPolicy: false } as const;
  const served = (middleware: express.RequestHandler) => {
    const app = express();
    app.disable('x-powered-by');
    app.set('etag', false);
    app.use(middleware);
    app.get('/', (_req, res) => {
      res.json({ ok: true });
    });
    return request(app).get('/');
  };
  // Date and connection vary per response; everything else must match.
  const stable = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'date' && name !== 'connection' && name !== 'keep-alive'));

  it('sets the same headers as helmet itself', async () => {
    const viaHelmet = await served(helmet(options));
    const viaAdapter = await served(securityHeaders(options));
    expect(stable(viaAdapter.headers)).toEqual(stable(viaHelmet.headers));
    expect(viaAdapter.headers['x-content-type-options']).toBe('nosniff');
    expect(viaAdapter.headers['strict-transport-security']).toBeDefined();
  });

  it('follows helmet’s options (it is not a copied list)', () => {
    const without = helmetHeaders({ contentSecurityPolicy: false, xFrameOptions: false });
    expect(without.has('X-Frame-Options')).toBe(false);
    expect(helmetHeaders({}).has('Content-Security-Policy')).toBe(true);
  });
});

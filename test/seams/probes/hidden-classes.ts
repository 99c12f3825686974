/**
 * Run by test/seams/app-server.test.ts as `node --allow-natives-syntax`: serves one Express app
 * through createAppServer and through Node's plain createServer, parks two concurrent requests in
 * the last layer and prints, as JSON, whether the two requests (and the two responses) share a
 * hidden class and have fast properties, with what Express made of the request.
 */
import { Agent, createServer, get, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type Request, type Response } from 'express';
import { createAppServer } from '../../../src/server/server';

// V8 intrinsics, only parseable with --allow-natives-syntax (hence a Function body, not TypeScript).
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;
const fastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;

const STATE = Symbol('state');

function probedApp(): Express {
  const app = express();
  // Properties added per request the way the service's layers add them.
  app.use((req, res, next) => {
    (req as Request & { id: string }).id = 'probe';
    (req as Request & { [STATE]: object })[STATE] = { at: Date.now() };
    res.setHeader('x-request-id', 'probe');
    next();
  });
  const parked: { req: Request; res: Response }[] = [];
  app.get('/probe', (req, res) => {
    parked.push({ req, res });
    if (parked.length < 2) return;
    const [a, b] = parked.splice(0, 2);
    const result = {
      sameRequestClass: sameMap(a.req, b.req),
      sameResponseClass: sameMap(a.res, b.res),
      fastProperties: fastProperties(a.req) && fastProperties(b.req) && fastProperties(a.res) && fastProperties(b.res),
      query: a.req.query,
      requestApp: a.req.app === app,
      responseApp: a.res.app === app,
    };
    a.res.json(result);
    b.res.json(result);
  });
  return app;
}

async function probe(serve: (app: Express) => Server): Promise<unknown> {
  const server = serve(probedApp());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const agent = new Agent({ keepAlive: true, maxSockets: 2 });
  const fetchOne = () =>
    new Promise<unknown>((resolve, reject) => {
      get({ host: '127.0.0.1', port, path: '/probe?a=1', agent }, (res: IncomingMessage) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('end', () => resolve(JSON.parse(body)));
      }).on('error', reject);
    });
  // Several rounds: the first requests of a fresh server may still be building its classes.
  let last: unknown;
  for (let round = 0; round < 3; round++) [last] = await Promise.all([fetchOne(), fetchOne()]);
  agent.destroy();
  await new Promise((resolve) => server.close(resolve));
  return last;
}

void (async () => {
  const appServer = await probe((app) => createAppServer(app));
  const plainServer = await probe((app) => createServer(app as (req: IncomingMessage, res: ServerResponse) => void));
  process.stdout.write(JSON.stringify({ appServer, plainServer }));
})();

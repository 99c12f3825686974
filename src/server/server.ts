import { IncomingMessage, ServerResponse, createServer, type Server, type ServerOptions } from 'node:http';
import type { Express } from 'express';
import { connectionTimeoutOptions, type ServerTimeouts } from '../lib/http-timeouts';

/**
 * The HTTP server for an Express app, whose requests and responses are born on the app's own
 * prototypes.
 *
 * Express re-parents every request and response (`Object.setPrototypeOf(req, app.request)`). V8
 * gives a re-parented object a hidden class outside its transition tree, and every property added
 * to it afterwards (Express's `res.locals`, `req.next`, ours) makes a class of its own: no two
 * requests share one, so every property access on req/res in every layer misses its inline cache
 * and is looked up in the runtime, about 170 times a request (counted with `--log-ic`). Here
 * `app.request` and `app.response` become the prototypes of the classes the server constructs, so
 * Express finds the prototype already set and changes nothing. Behaviour is unchanged: the
 * prototypes still inherit everything Express's had (tests drive the app through supertest's own
 * server, where Express re-parents as usual).
 */
export type { ServerTimeouts };

export function createAppServer(app: Express, options: ServerOptions = {}, timeouts?: ServerTimeouts): Server {
  class AppRequest extends IncomingMessage {}
  class AppResponse extends ServerResponse {}
  Object.setPrototypeOf(AppRequest.prototype, app.request);
  Object.setPrototypeOf(AppResponse.prototype, app.response);
  app.request = AppRequest.prototype as Express['request'];
  app.response = AppResponse.prototype as unknown as Express['response'];
  return createServer({ ...(timeouts ? connectionTimeoutOptions(timeouts) : {}), ...options, IncomingMessage: AppRequest, ServerResponse: AppResponse }, app);
}

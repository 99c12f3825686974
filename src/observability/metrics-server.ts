import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from './metrics';
import { connectionTimeoutOptions, type ServerTimeouts } from '../lib/http-timeouts';

/**
 * `GET /metrics` in the Prometheus text format, on a listener of its own (METRICS_PORT on
 * METRICS_HOST), never on the API's port: the API may face the internet, the metrics should not.
 */
export function startMetricsServer(m: Metrics, options: { port: number; host: string; logger: Logger; timeouts: ServerTimeouts }): Promise<Server> {
  // The API's connection timeouts: a silent client holds no socket here either.
  const server = createServer(connectionTimeoutOptions(options.timeouts), (req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Only GET /metrics is served here.\n');
      return;
    }
    m.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': m.registry.contentType }).end(text),
      (err: unknown) => {
        options.logger.error({ err }, 'metrics could not be collected');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be collected\n');
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

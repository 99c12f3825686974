// The machine's ceiling for the HTTP layer: Node's own http server answering a constant JSON.
// No framework, no database. Started by bench/run.ts as its own process (PORT from the env).
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';

const body = Buffer.from(JSON.stringify({ ok: true, service: 'bare-http', note: 'constant body' }));

const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 3100), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));

// Scenario 17's baseline: bare oidc-provider serving the client_credentials grant as the service's
// authorization server does (RS256 RFC 9068 JWT access tokens for the resource `<issuer>/v1`, the
// same claims, client_secret_basic), but with the library's in-memory adapter, one static client
// whose secret the library compares itself, and no Express in front. What the service spends
// above this is its own: the client read from the database, the hashed-secret check, the front.
// Started by bench/run.ts as its own process (PORT from the env).
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const port = Number(process.env.PORT ?? 3100);
const issuer = `http://localhost:${port}`;
const resource = `${issuer}/v1`;
const scopes = (process.env.BENCH_SCOPES ?? 'teams.read').split(' ');
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: process.env.BENCH_CLIENT_ID ?? 'bench-client',
      client_secret: process.env.BENCH_CLIENT_SECRET ?? 'bench-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: scopes.join(' '),
    },
  ],
  jwks: { keys: [jwk] },
  scopes,
  routes: { token: '/oauth/token', jwks: '/oauth/jwks' },
  ttl: { ClientCredentials: 600 },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({ scope: scopes.join(' '), audience: resource, accessTokenTTL: 600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
    },
  },
  formats: {
    customizers: {
      jwt: (_ctx, _token, jwt) => {
        jwt.payload.sub = 'om_bench';
        jwt.payload.org_id = 'org_bench';
      },
    },
  },
});

const callback = provider.callback();
const server = createServer((req, res) => {
  if (req.url === '/health') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
    return;
  }
  callback(req, res);
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));

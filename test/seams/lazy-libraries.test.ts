import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * What a service process loads at start (issue #20, memory per process): libraries that only one
 * route group needs are loaded on that group's first use (src/lib/lazy.ts), never by the import
 * graph of the app and of main.ts. A new top-level import of one of them fails here, naming it.
 * The graph is loaded in a child process (jest's module registry is not Node's).
 */
const LOADED_ON_FIRST_USE = [
  'undici', // outbound calls to tenant URLs (src/outbound/client.ts)
  '@node-saml/node-saml', // SAML sign-in and SP metadata (src/sso/saml/)
  '@xmldom/xmldom',
  'xml-crypto',
  'openid-client', // OIDC sign-in (src/sso/oidc/client.ts)
  'tldts', // claiming an SSO domain (src/sso/domain-name.ts)
  'swagger-ui-express', // /docs (src/server/docs.ts)
  'compression', // /docs and the contract's routes
  'yaml', // /openapi.yaml
  '@zxcvbn-ts/language-common', // the common-password list, on the first password chosen (src/protection/passwords.ts)
  '@electric-sql/pglite', // only when the embedded database is used (src/db/connect.ts)
  'otplib', // TOTP second factors (src/mfa/totp.ts)
  '@simplewebauthn/server', // passkeys (src/mfa/webauthn.ts)
  'prom-client', // metrics, only with METRICS_PORT (src/observability/metrics.ts)
  '@opentelemetry/api', // traces, only when OTEL_* asks for them (src/observability/start-tracing.ts)
  '@opentelemetry/sdk-node',
];

const ROOT = path.resolve(__dirname, '..', '..');

test('the start-up import graph (src/server/app.ts and everything src/main.ts imports) loads no first-use library', () => {
  const mainImports = [...readFileSync(path.join(ROOT, 'src', 'main.ts'), 'utf8').matchAll(/from '(\.[^']+)'/g)].map((m) => m[1]!);
  expect(mainImports).toContain('./server/app');
  const script = `
    for (const file of ${JSON.stringify(mainImports)}) require(require('node:path').join(${JSON.stringify(path.join(ROOT, 'src'))}, file));
    const loaded = new Set();
    for (const file of Object.keys(require.cache)) {
      const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(file);
      if (m) loaded.add(m[1]);
    }
    process.stdout.write(JSON.stringify([...loaded]));
  `;
  const out = execFileSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  const loaded = JSON.parse(out) as string[];
  expect(loaded).toContain('express'); // the probe itself works
  expect(LOADED_ON_FIRST_USE.filter((name) => loaded.includes(name))).toEqual([]);
});

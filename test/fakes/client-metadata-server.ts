import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo, LookupFunction } from 'node:net';
import * as x509 from '@peculiar/x509';

/**
 * A client's own HTTPS server publishing its Client ID Metadata Document, as an MCP client or
 * agent does: a name of its own (`CIMD_HOST`, resolved to 127.0.0.1 by the outbound client's
 * `lookup` in tests, never by DNS), a self-signed certificate for that name (@peculiar/x509) that
 * the test's outbound client trusts (`ca`), documents the test sets per path with their caching
 * headers, and a count of requests per path.
 */
export const CIMD_HOST = 'agent.cimd.test';

export interface ClientMetadataServer {
  /** `https://agent.cimd.test:<port>` */
  origin: string;
  /** The certificate (PEM), for the outbound client's `ca`. */
  ca: string;
  /** Resolves CIMD_HOST to 127.0.0.1 (any other name: not found). */
  lookup: LookupFunction;
  serve(path: string, body: unknown, headers?: Record<string, string>): void;
  hits(path: string): number;
  close(): Promise<void>;
}

async function selfSigned(host: string): Promise<{ cert: string; key: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: `CN=${host}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 86_400_000),
    keys: keys as unknown as CryptoKeyPair,
    signingAlgorithm: alg,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }])],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
  return { cert: cert.toString('pem'), key };
}

export async function startClientMetadataServer(): Promise<ClientMetadataServer> {
  const { cert, key } = await selfSigned(CIMD_HOST);
  const documents = new Map<string, { body: string; headers: Record<string, string> }>();
  const counts = new Map<string, number>();
  const server = https.createServer({ cert, key }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const doc = documents.get(path);
    if (!doc) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json', ...doc.headers }).end(doc.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const lookup = ((hostname: string, options: { all?: boolean }, callback: (err: NodeJS.ErrnoException | null, address: unknown, family?: number) => void) => {
    if (hostname !== CIMD_HOST) return callback(Object.assign(new Error(`${hostname} not found`), { code: 'ENOTFOUND' }), '');
    if (options.all) return callback(null, [{ address: '127.0.0.1', family: 4 }]);
    return callback(null, '127.0.0.1', 4);
  }) as unknown as LookupFunction;
  return {
    origin: `https://${CIMD_HOST}:${port}`,
    ca: cert,
    lookup,
    serve: (path, body, headers = {}) => documents.set(path, { body: typeof body === 'string' ? body : JSON.stringify(body), headers }),
    hits: (path) => counts.get(path) ?? 0,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

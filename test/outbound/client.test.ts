import http from 'node:http';
import os from 'node:os';
import type { AddressInfo, LookupFunction } from 'node:net';
import { createOutbound, OutboundError, type Outbound } from '../../src/outbound';

/**
 * The connect-time egress check (src/outbound/client.ts) against a real listener on every local
 * address (`::`, dual stack): a refused call must never reach it, and the same call reaches it
 * once OUTBOUND_ALLOWED_NETWORKS lists the network.
 */
let server: http.Server;
let port: number;
const received: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    if (req.url === '/redirect') {
      res.writeHead(302, { location: `http://127.0.0.2:${port}/private` }).end();
      return;
    }
    if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('x'.repeat(1000));
      res.end('x'.repeat(1000));
      return;
    }
    if (req.url === '/hang') return;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '::', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  received.length = 0;
});

const CALL = { timeoutMs: 3000, maxBytes: 1024 };

async function refusal(outbound: Outbound, url: string): Promise<OutboundError> {
  const err = await outbound.request(url, CALL).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OutboundError);
  return err as OutboundError;
}

/** Resolves the test's own names; everything else fails like an unknown name. */
function lookupOf(names: Record<string, string[]>): LookupFunction {
  return ((hostname: string, _options: unknown, callback: (err: Error | null, addresses: { address: string; family: number }[]) => void) => {
    const addresses = names[hostname];
    if (!addresses) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  }) as unknown as LookupFunction;
}

describe('literal addresses', () => {
  const cases: [string, string, string][] = [
    ['IPv4 loopback', '127.0.0.1', '127.0.0.0/8'],
    ['IPv6 loopback', '[::1]', '::1/128'],
    ['IPv4-mapped IPv6 loopback', '[::ffff:127.0.0.1]', '127.0.0.0/8'],
    ['IPv4-mapped IPv6 loopback in hex', '[::ffff:7f00:1]', '::ffff:127.0.0.0/104'],
    ['IPv4 loopback written as one number', '2130706433', '127.0.0.1/32'],
  ];
  test.each(cases)('%s is refused with nothing received, and reached when allowed', async (_name, host, network) => {
    const err = await refusal(createOutbound(), `http://${host}:${port}/probe`);
    expect(err.kind).toBe('not_allowed');
    expect(err.message).toMatch(/not allowed/);
    expect(received).toEqual([]);

    const allowed = await createOutbound({ allowedNetworks: [network] }).request(`http://${host}:${port}/probe`, CALL);
    expect(allowed.status).toBe(200);
    expect(received).toEqual(['GET /probe']);
  });

  // This machine's own non-loopback addresses (unique-local, reserved, private, ...) are real
  // listeners of the server: a call to them must not arrive either.
  const local = Object.values(os.networkInterfaces())
    .flat()
    .filter((i): i is os.NetworkInterfaceInfo => !!i && !i.internal && !i.address.startsWith('fe80'));
  test('every non-loopback address of this machine is refused unless allowed', async () => {
    expect(local.length).toBeGreaterThan(0);
    for (const iface of local) {
      const host = iface.family === 'IPv6' ? `[${iface.address}]` : iface.address;
      const err = await refusal(createOutbound(), `http://${host}:${port}/own`);
      expect(err.kind).toBe('not_allowed');
      expect(received).toEqual([]);
      const res = await createOutbound({ allowedNetworks: [iface.cidr ?? `${iface.address}/${iface.family === 'IPv6' ? 128 : 32}`] }).request(`http://${host}:${port}/own`, CALL);
      expect(res.status).toBe(200);
      expect(received).toEqual(['GET /own']);
      received.length = 0;
    }
  });

  test.each([
    ['RFC 1918', '10.1.2.3'],
    ['RFC 1918 (172.16/12)', '172.20.0.1'],
    ['RFC 1918 (192.168/16)', '192.168.1.1'],
    ['cloud metadata (link-local)', '169.254.169.254'],
    ['CGNAT', '100.64.0.1'],
    ['unspecified', '0.0.0.0'],
    ['broadcast', '255.255.255.255'],
    ['multicast', '224.0.0.1'],
    ['reserved', '240.0.0.1'],
    ['IPv6 unique-local', '[fd12:3456::1]'],
    ['IPv6 link-local', '[fe80::1]'],
    ['IPv6 unspecified', '[::]'],
    ['IPv4-mapped metadata', '[::ffff:169.254.169.254]'],
    ['NAT64 of RFC 1918', '[64:ff9b::10.0.0.1]'],
    ['6to4 of loopback', '[2002:7f00:1::]'],
  ])('%s (%s) is refused before connecting', async (_name, host) => {
    const err = await refusal(createOutbound(), `http://${host}/latest/meta-data/`);
    expect(err.kind).toBe('not_allowed');
  });
});

describe('names are checked on the resolved address at connect time', () => {
  test('localhost (resolves to loopback) is refused with nothing received, reached when allowed', async () => {
    const err = await refusal(createOutbound(), `http://localhost:${port}/by-name`);
    expect(err.kind).toBe('not_allowed');
    expect(err.message).toMatch(/localhost resolves to .* not allowed/);
    expect(received).toEqual([]);
    const res = await createOutbound({ allowedNetworks: ['127.0.0.0/8', '::1/128'] }).request(`http://localhost:${port}/by-name`, CALL);
    expect(res.status).toBe(200);
    expect(received).toEqual(['GET /by-name']);
  });

  test('a public-looking name that resolves to loopback is refused, nothing received', async () => {
    const lookup = lookupOf({ 'runtime.customer.example': ['127.0.0.1'] });
    const err = await refusal(createOutbound({ lookup }), `http://runtime.customer.example:${port}/x`);
    expect(err.kind).toBe('not_allowed');
    expect(received).toEqual([]);
    const res = await createOutbound({ lookup, allowedNetworks: ['127.0.0.1/32'] }).request(`http://runtime.customer.example:${port}/x`, CALL);
    expect(res.status).toBe(200);
    expect(received).toEqual(['GET /x']);
  });

  test.each([
    ['RFC 1918', ['10.0.0.7']],
    ['metadata', ['169.254.169.254']],
    ['IPv6 unique-local', ['fd00::5']],
    ['IPv4-mapped loopback', ['::ffff:127.0.0.1']],
    ['one bad address among public ones', ['93.184.216.34', '10.0.0.7']],
  ])('a name resolving to %s is refused', async (_name, addresses) => {
    const err = await refusal(createOutbound({ lookup: lookupOf({ 'api.customer.example': addresses }) }), 'http://api.customer.example/v1');
    expect(err.kind).toBe('not_allowed');
    expect(err.message).toContain('api.customer.example resolves to');
  });

  test('an unknown name is unreachable, not refused', async () => {
    const err = await refusal(createOutbound({ lookup: lookupOf({}) }), 'http://nowhere.customer.example/');
    expect(err.kind).toBe('unreachable');
  });
});

describe('redirects, timeouts and size', () => {
  test('a redirect to a private address is not followed: the 302 comes back, the target gets nothing', async () => {
    const outbound = createOutbound({ allowedNetworks: ['127.0.0.1/32'] });
    const res = await outbound.request(`http://127.0.0.1:${port}/redirect`, CALL);
    expect(res.status).toBe(302);
    expect(received).toEqual(['GET /redirect']);
  });

  test('a reply over the cap is refused while streaming', async () => {
    const err = await refusal(createOutbound({ allowedNetworks: ['127.0.0.1/32'] }), `http://127.0.0.1:${port}/big`);
    expect(err.kind).toBe('too_large');
  });

  test('no answer within the timeout', async () => {
    const err = await createOutbound({ allowedNetworks: ['127.0.0.1/32'] })
      .request(`http://127.0.0.1:${port}/hang`, { timeoutMs: 200, maxBytes: 1024 })
      .catch((e: unknown) => e as OutboundError);
    expect(err).toBeInstanceOf(OutboundError);
    expect((err as OutboundError).kind).toBe('timeout');
  });
});

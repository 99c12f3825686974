import { EgressPolicy, checkTenantUrl, parseAllowedNetworks } from '../../src/outbound';
import { Invalid } from '../../src/lib/errors';
import { SettingsError, loadSettings } from '../../src/settings';

const FIELD = ['body', 'url'];

function refused(policy: EgressPolicy, url: string, rules = {}): Invalid {
  try {
    checkTenantUrl(policy, url, FIELD, rules);
  } catch (err) {
    expect(err).toBeInstanceOf(Invalid);
    return err as Invalid;
  }
  throw new Error(`${url} was accepted`);
}

describe('write-time URL check', () => {
  const policy = new EgressPolicy();

  test.each([
    'http://127.0.0.1:8080/',
    'http://127.1/',
    'http://0x7f000001/',
    'http://2130706433/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://192.168.0.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://[::1]/',
    'http://[::]/',
    'http://[fd00::1]/',
    'http://[fe80::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:a9fe:a9fe]/',
    // IPv6 forms carrying an IPv4 address: compatible (normalised to [::7f00:1]), SIIT, NAT64,
    // local-use NAT64, 6to4, Teredo (server, then the obfuscated client), ISATAP (both forms).
    'http://[::127.0.0.1]/',
    'http://[::7f00:1]/',
    'http://[::a9fe:a9fe]/',
    'http://[::ffff:0:127.0.0.1]/',
    'http://[64:ff9b::7f00:1]/',
    'http://[64:ff9b:1::808:808]/',
    'http://[2002:7f00:1::1]/',
    'http://[2002:a9fe:a9fe::]/',
    'http://[2001:0:7f00:1::f7f7:f7f7]/',
    'http://[2001:0:808:808::80ff:fffe]/',
    'http://[2600::5efe:7f00:1]/',
    'http://[2600::200:5efe:a9fe:a9fe]/',
    'http://localhost:3000/',
    'http://api.localhost/',
  ])('%s is refused naming the field', (url) => {
    const err = refused(policy, url);
    expect(err.body()).toEqual({ error: 'invalid_request', message: expect.stringMatching(/not allowed/), details: [{ path: FIELD, message: expect.stringMatching(/not allowed/) }] });
  });

  test.each([
    ['ftp://files.example.com/', /http or https/],
    ['file:///etc/passwd', /http or https/],
    ['https://user:pass@api.example.com/', /credentials/],
    ['https://token@api.example.com/', /credentials/],
    ['not a url', /absolute URL/],
  ])('%s is refused', (url, message) => {
    expect(refused(policy, url).details).toEqual([{ path: FIELD, message: expect.stringMatching(message) }]);
  });

  test('public names and addresses pass; https-only callers refuse http', () => {
    expect(checkTenantUrl(policy, 'http://runtime.example.com/base', FIELD).hostname).toBe('runtime.example.com');
    expect(checkTenantUrl(policy, 'https://93.184.216.34/', FIELD).hostname).toBe('93.184.216.34');
    // The same forms carrying a public address stay reachable.
    for (const url of ['https://[64:ff9b::808:808]/', 'https://[2002:808:808::1]/', 'https://[2600::5efe:808:808]/', 'https://[2606:4700::1111]/']) {
      expect(checkTenantUrl(policy, url, FIELD).protocol).toBe('https:');
    }
    expect(refused(policy, 'http://hooks.example.com/', { httpsOnly: true }).details[0]!.message).toMatch(/https/);
    expect(checkTenantUrl(policy, 'https://hooks.example.com/', FIELD, { httpsOnly: true }).protocol).toBe('https:');
  });

  test('OUTBOUND_ALLOWED_NETWORKS allows exactly the listed networks (and http to them for https-only callers)', () => {
    const allowing = new EgressPolicy(['10.20.0.0/16', '127.0.0.0/8']);
    expect(checkTenantUrl(allowing, 'http://10.20.3.4:8080/', FIELD).port).toBe('8080');
    expect(checkTenantUrl(allowing, 'http://127.0.0.1:9/', FIELD, { httpsOnly: true }).port).toBe('9');
    expect(checkTenantUrl(allowing, 'http://[::ffff:127.0.0.1]/', FIELD).hostname).toBe('[::ffff:7f00:1]');
    refused(allowing, 'http://10.21.0.1/');
    refused(allowing, 'http://[::1]/');
  });
});

describe('OUTBOUND_ALLOWED_NETWORKS', () => {
  test('parses CIDRs, normalised', () => {
    expect(parseAllowedNetworks(' 10.20.0.0/16 , fd00::/8,')).toEqual(['10.20.0.0/16', 'fd00::/8']);
    expect(loadSettings({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' }).outboundAllowedNetworks).toEqual(['127.0.0.0/8']);
    expect(loadSettings({}).outboundAllowedNetworks).toEqual([]);
  });
  test('a bad entry stops the service naming the variable', () => {
    expect(() => loadSettings({ OUTBOUND_ALLOWED_NETWORKS: '10.0.0.0/8,example.com' })).toThrow(SettingsError);
    expect(() => loadSettings({ OUTBOUND_ALLOWED_NETWORKS: '10.0.0.0/33' })).toThrow(/OUTBOUND_ALLOWED_NETWORKS.*10.0.0.0\/33/);
  });
});

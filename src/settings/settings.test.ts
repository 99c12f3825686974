import { loadSettings, SettingsError } from '.';

describe('loadSettings', () => {
  it('has defaults that need no configuration', () => {
    const s = loadSettings({});
    expect(s).toMatchObject({ port: 3000, databaseUrl: undefined, dataDir: './data', planGating: true, sessionTtlMs: 30 * 86_400_000 });
    expect(s.suiteGraphBaseUrl).toBe('https://graph.microsoft.com/v1.0');
  });

  it('listens on loopback by default; HOST is an IP address or localhost', () => {
    expect(loadSettings({})).toMatchObject({ host: '127.0.0.1', bootstrapAllowOpen: false });
    expect(loadSettings({ HOST: '::1' }).host).toBe('::1');
    expect(loadSettings({ HOST: 'localhost' }).host).toBe('localhost');
    expect(() => loadSettings({ HOST: 'api.internal' })).toThrow(/HOST must be an IP address/);
  });

  it('refuses to start bootstrap-open (no BOOTSTRAP_TOKEN) on an address other machines reach, unless BOOTSTRAP_ALLOW_OPEN says so', () => {
    for (const host of ['0.0.0.0', '::', '10.0.0.5', '::ffff:10.0.0.5']) {
      expect(() => loadSettings({ HOST: host })).toThrow(SettingsError);
      expect(() => loadSettings({ HOST: host })).toThrow(/BOOTSTRAP_TOKEN is unset: the first caller of POST \/v1\/bootstrap would become platform admin/);
      expect(loadSettings({ HOST: host, BOOTSTRAP_TOKEN: 'a-long-bootstrap-token' }).host).toBe(host);
      expect(loadSettings({ HOST: host, BOOTSTRAP_ALLOW_OPEN: 'on' }).bootstrapAllowOpen).toBe(true);
    }
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost', '::ffff:127.0.0.1']) expect(loadSettings({ HOST: host }).host).toBe(host);
    expect(() => loadSettings({ HOST: '0.0.0.0', BOOTSTRAP_ALLOW_OPEN: 'maybe' })).toThrow(/BOOTSTRAP_ALLOW_OPEN must be on\/off/);
  });

  it('reads durations, booleans and URLs', () => {
    const s = loadSettings({ SESSION_TTL: '12h', PLAN_GATING: 'off', SUITE_LOGIN_BASE_URL: 'http://127.0.0.1:9999/', CORS_ORIGINS: 'https://a.test, https://b.test' });
    expect(s.sessionTtlMs).toBe(12 * 3_600_000);
    expect(s.planGating).toBe(false);
    expect(s.suiteLoginBaseUrl).toBe('http://127.0.0.1:9999');
    expect(s.corsOrigins).toEqual(['https://a.test', 'https://b.test']);
  });

  it('reads DNS_SERVERS (host[:port]) and SSO_RETURN_ORIGINS (origins); both default to empty', () => {
    expect(loadSettings({})).toMatchObject({ dnsServers: [], ssoReturnOrigins: [] });
    const s = loadSettings({ DNS_SERVERS: '127.0.0.1:5353, 1.1.1.1, [::1]:53, ::1', SSO_RETURN_ORIGINS: 'https://app.example.com, http://localhost:5173/' });
    expect(s.dnsServers).toEqual(['127.0.0.1:5353', '1.1.1.1', '[::1]:53', '::1']);
    expect(s.ssoReturnOrigins).toEqual(['https://app.example.com', 'http://localhost:5173']);
  });

  it('reads TRUST_PROXY as Express\'s trust proxy forms: off, a hop count, or the proxies\' addresses', () => {
    expect(loadSettings({}).trustProxy).toBe(false);
    expect(loadSettings({ TRUST_PROXY: 'off' }).trustProxy).toBe(false);
    expect(loadSettings({ TRUST_PROXY: '0' }).trustProxy).toBe(false);
    expect(loadSettings({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadSettings({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadSettings({ TRUST_PROXY: 'loopback, 10.0.0.0/8 ,fd00::/8, 192.0.2.7, Uniquelocal' }).trustProxy).toEqual(['loopback', '10.0.0.0/8', 'fd00::/8', '192.0.2.7', 'uniquelocal']);
  });

  it.each(['on', 'true', 'ON', 'yes'])('refuses TRUST_PROXY=%s, saying why and what to give instead', (value) => {
    expect(() => loadSettings({ TRUST_PROXY: value })).toThrow(SettingsError);
    expect(() => loadSettings({ TRUST_PROXY: value })).toThrow(/left-most X-Forwarded-For.*forged.*number of proxies.*addresses/);
  });

  it.each(['10.0.0.0/33', 'proxy.internal', '10.0.0.300', '10.0.0.1, nonsense'])('refuses TRUST_PROXY=%s naming the entry', (value) => {
    expect(() => loadSettings({ TRUST_PROXY: value })).toThrow(/TRUST_PROXY must be a hop count or proxy addresses/);
  });

  it('reads HEADERS_TIMEOUT_MS (default 10 s)', () => {
    expect(loadSettings({}).headersTimeoutMs).toBe(10_000);
    expect(loadSettings({ HEADERS_TIMEOUT_MS: '2500' }).headersTimeoutMs).toBe(2500);
    expect(() => loadSettings({ HEADERS_TIMEOUT_MS: '0' })).toThrow(SettingsError);
  });

  it('reads the audit checkpoint and stream settings, with working defaults', () => {
    expect(loadSettings({}).audit).toEqual({ checkpointEvery: 1000, checkpointIntervalMs: 3_600_000, dispatch: true, streamTimeoutMs: 30_000 });
    const s = loadSettings({ AUDIT_CHECKPOINT_EVERY: '50', AUDIT_CHECKPOINT_INTERVAL: '10m', AUDIT_DISPATCH: 'off', AUDIT_STREAM_TIMEOUT_MS: '5000' });
    expect(s.audit).toEqual({ checkpointEvery: 50, checkpointIntervalMs: 600_000, dispatch: false, streamTimeoutMs: 5000 });
    expect(() => loadSettings({ AUDIT_CHECKPOINT_EVERY: '0' })).toThrow(/AUDIT_CHECKPOINT_EVERY/);
    expect(() => loadSettings({ AUDIT_CHECKPOINT_INTERVAL: 'hourly' })).toThrow(/AUDIT_CHECKPOINT_INTERVAL/);
  });

  it('reads WORKER_STALE_AFTER as seconds or a duration (default 120 s)', () => {
    expect(loadSettings({}).workerStaleAfterMs).toBe(120_000);
    expect(loadSettings({ WORKER_STALE_AFTER: '90' }).workerStaleAfterMs).toBe(90_000);
    expect(loadSettings({ WORKER_STALE_AFTER: '2m' }).workerStaleAfterMs).toBe(120_000);
  });

  it.each([
    ['WORKER_STALE_AFTER', '0'],
    ['WORKER_STALE_AFTER', 'soon'],
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['SESSION_TTL', 'forever'],
    ['PLAN_GATING', 'maybe'],
    ['SUITE_GRAPH_BASE_URL', 'ftp://x'],
    ['DATABASE_URL', 'mysql://x'],
    ['SECRET_KEY', 'short'],
    ['LOG_LEVEL', 'loud'],
    ['DNS_SERVERS', '127.0.0.1:99999'],
    ['DNS_SERVERS', 'dns server'],
    ['DNS_SERVERS', 'dns.example.com:53'],
    ['DNS_SERVERS', '1.1.1.1:53/udp'],
    ['SSO_RETURN_ORIGINS', 'https://app.example.com/path'],
    ['SSO_RETURN_ORIGINS', 'app.example.com'],
    ['SSO_RETURN_ORIGINS', 'ftp://app.example.com'],
  ])('refuses %s=%s with a message naming it', (name, value) => {
    expect(() => loadSettings({ [name]: value })).toThrow(SettingsError);
    expect(() => loadSettings({ [name]: value })).toThrow(name);
  });
});

describe('mail settings', () => {
  it('default to .eml files under DATA_DIR (./mail with DATABASE_URL), links from PUBLIC_BASE_URL, 6 attempts', () => {
    expect(loadSettings({ DATA_DIR: '/srv/cp/' }).mail).toMatchObject({ smtpUrl: undefined, dir: '/srv/cp/mail', appBaseUrl: 'http://localhost:3000', maxAttempts: 6, dispatch: true });
    expect(loadSettings({ DATABASE_URL: 'postgres://db/cp', PUBLIC_BASE_URL: 'https://cp.example/' }).mail).toMatchObject({ dir: './mail', appBaseUrl: 'https://cp.example' });
    expect(loadSettings({ APP_BASE_URL: 'https://app.example', SMTP_URL: 'smtps://u:p@mail.example:465', MAIL_MAX_ATTEMPTS: '3' }).mail).toMatchObject({
      appBaseUrl: 'https://app.example',
      smtpUrl: 'smtps://u:p@mail.example:465',
      maxAttempts: 3,
    });
  });

  it('refuses an SMTP_URL that is not smtp:// or smtps:// without repeating it (it may hold a password)', () => {
    for (const value of ['http://user:hunter2@mail.example', 'hunter2', 'smtp://']) {
      expect(() => loadSettings({ SMTP_URL: value })).toThrow(SettingsError);
      try {
        loadSettings({ SMTP_URL: value });
      } catch (err) {
        expect((err as Error).message).toContain('SMTP_URL');
        expect((err as Error).message).not.toContain('hunter2');
      }
    }
  });
});

describe('OAuth settings (docs/oauth.md#settings)', () => {
  it('defaults: 10-minute access tokens, 30-day refresh tokens, CIMD and device flow on, no dynamic registration', () => {
    expect(loadSettings({}).oauth).toEqual({ accessTokenTtlSeconds: 600, refreshTokenTtlSeconds: 30 * 86400, clientIdMetadataDocuments: true, dynamicRegistration: 'off', deviceFlow: true });
  });

  it('takes seconds or durations, and refuses to start with access tokens over an hour', () => {
    expect(loadSettings({ ACCESS_TOKEN_TTL: '300', REFRESH_TOKEN_TTL: '7d', OAUTH_DCR: 'open', OAUTH_CIMD: 'off', OAUTH_DEVICE_FLOW: 'off' }).oauth).toEqual({
      accessTokenTtlSeconds: 300,
      refreshTokenTtlSeconds: 7 * 86400,
      clientIdMetadataDocuments: false,
      dynamicRegistration: 'open',
      deviceFlow: false,
    });
    expect(loadSettings({ ACCESS_TOKEN_TTL: '1h' }).oauth.accessTokenTtlSeconds).toBe(3600);
    expect(() => loadSettings({ ACCESS_TOKEN_TTL: '61m' })).toThrow(/ACCESS_TOKEN_TTL must be at most 1h/);
    expect(() => loadSettings({ ACCESS_TOKEN_TTL: '3601' })).toThrow(/ACCESS_TOKEN_TTL/);
    expect(() => loadSettings({ OAUTH_DCR: 'closed' })).toThrow(/OAUTH_DCR must be off or open/);
  });
});

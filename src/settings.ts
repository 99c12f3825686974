import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { parseAllowedNetworks } from './outbound/policy';
import type { PasswordHashCost } from './lib/crypto';
import type { AuditBenchSkip } from './domain/audit-context';

/**
 * Settings come from the environment only, validated once at start: a bad value stops the process
 * with a message naming the variable, instead of surfacing later as a confusing failure.
 */
export interface Settings {
  port: number;
  /** HOST: the address the API listens on (default loopback: only this machine reaches it). */
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  secretKey: string | undefined;
  publicBaseUrl: string;
  bootstrapToken: string | undefined;
  /** BOOTSTRAP_ALLOW_OPEN: start on a non-loopback HOST without BOOTSTRAP_TOKEN (refused otherwise). */
  bootstrapAllowOpen: boolean;
  sessionTtlMs: number;
  /** Actions that change who can do what need a session authenticated this recently. */
  freshSessionMaxAgeMs: number;
  /** Organization deletion (docs/organization-deletion.md). */
  orgLifecycle: OrgLifecycleSettings;
  planGating: boolean;
  suiteGraphBaseUrl: string;
  suiteLoginBaseUrl: string;
  suiteTimeoutMs: number;
  /** Bound on each call to an MCP connection's OAuth token endpoint. */
  mcpOAuthTimeoutMs: number;
  workerRuntimeTimeoutMs: number;
  /** Bound on each call to an LLM provider's API (the model-list test). */
  llmProviderTimeoutMs: number;
  /** OUTBOUND_ALLOWED_NETWORKS: CIDRs tenant-supplied URLs may reach besides public addresses (src/outbound). */
  outboundAllowedNetworks: string[];
  /** A worker is online until this long after its last heartbeat (WORKER_STALE_AFTER). */
  workerStaleAfterMs: number;
  logLevel: string;
  /** METRICS_PORT: serve GET /metrics (Prometheus) on this port; unset: metrics off. */
  metricsPort: number | undefined;
  /** METRICS_HOST: the address the metrics listener binds (default 127.0.0.1). */
  metricsHost: string;
  /** SHUTDOWN_TIMEOUT_MS: on SIGTERM, in-flight requests and jobs get this long before the process exits anyway. */
  shutdownTimeoutMs: number;
  corsOrigins: string[];
  bodyLimitBytes: number;
  requestTimeoutMs: number;
  /**
   * HEADERS_TIMEOUT_MS: a connection must have sent a whole request head this long after it
   * opened (or after it started a request); one that never sends a byte is closed then too.
   */
  headersTimeoutMs: number;
  /** TRUST_PROXY: Express's `trust proxy` (false, a hop count, or the proxies' addresses). */
  trustProxy: TrustProxy;
  /** Audit entries older than this many days are pruned (src/audit/retention.ts). */
  auditRetentionDays: number;
  /** PASSWORD_HASH_COST: argon2 cost of new password hashes; `test` is for test suites only (src/lib/crypto.ts). */
  passwordHashCost: PasswordHashCost;
  /** Benchmark only (AUDIT_BENCH_DISABLE): what audited writes leave out. Never in production. */
  auditBenchDisable: AuditBenchSkip;
  /** Checkpoints and streams of the audit log (src/audit/checkpoint-job.ts, src/audit-streams/). */
  audit: AuditSettings;
  /** Webhook delivery (src/webhooks/). */
  webhooks: WebhookSettings;
  /** Outgoing mail (src/mail/). */
  mail: MailSettings;
  /** DNS_SERVERS: resolvers for SSO domain verification (`host[:port]`); empty = the system's. */
  dnsServers: string[];
  /** SSO_RETURN_ORIGINS: origins an SSO sign-in may return to (`returnTo`); empty = none. */
  ssoReturnOrigins: string[];
  /** SCIM: the most resources one /scim/v2 list returns (`count` above it is cut to it). */
  scimMaxResults: number;
  /**
   * EMAIL_VERIFICATION: `required` (an unverified user's session reaches only its account routes,
   * src/access/session-gates.ts) or `optional` (addresses are still verified, nothing waits on it).
   */
  emailVerification: 'required' | 'optional';
  /** Rate limits (src/protection/rate-limit.ts); null turns one off. */
  rateLimits: RateLimitSettings;
  /** The authorization server (src/oauth, docs/oauth.md#settings). */
  oauth: OAuthSettings;
  /** Passkeys' relying party (src/mfa): WEBAUTHN_RP_ID, WEBAUTHN_RP_NAME, WEBAUTHN_ORIGINS. */
  webauthn: { id: string; name: string; origins: string[] };
}

/** `points` per `windowMs`, e.g. 10 failures per 15 minutes. */
export interface RateLimitRule {
  points: number;
  windowMs: number;
}

export interface RateLimitSettings {
  signInEmail: RateLimitRule | null;
  signInIp: RateLimitRule | null;
  /**
   * Wrong second-factor answers per account, across challenges (docs/second-factors.md): apart
   * from signInEmail, which a right password clears before each challenge.
   */
  secondFactorUser: RateLimitRule | null;
  signUpIp: RateLimitRule | null;
  invitationAcceptUser: RateLimitRule | null;
  invitationAcceptIp: RateLimitRule | null;
  /** Resends of one invitation (its message goes to someone who may not want it). */
  invitationResend: RateLimitRule | null;
  bootstrapIp: RateLimitRule | null;
  /** SSO starts per IP (every start stores a login state). */
  ssoStartIp: RateLimitRule | null;
  /** Failed SSO callbacks and code exchanges per IP (counted like failed sign-ins). */
  ssoIp: RateLimitRule | null;
  /** Verification messages a user may ask for again: one a minute and a few an hour. */
  verifyResendUserMinute: RateLimitRule | null;
  verifyResendUserHour: RateLimitRule | null;
  /** E-mail changes a user asks for (each mails a link to an address of their choosing). */
  emailChangeUser: RateLimitRule | null;
  /**
   * Messages to one address, of every kind (src/mail/budget.ts): whoever can make the service mail
   * an address of their choosing (sign-up, e-mail change, invitations, resets) cannot flood it.
   */
  mailRecipient: RateLimitRule | null;
  /** Invitations an organization creates or resends (each mails an address its admins chose). */
  invitationOrg: RateLimitRule | null;
  /** Password reset requests per address and per IP. */
  passwordResetEmail: RateLimitRule | null;
  passwordResetIp: RateLimitRule | null;
}

export interface AuditSettings {
  /** AUDIT_CHECKPOINT_EVERY: an organization gets a checkpoint once this many entries follow its latest. */
  checkpointEvery: number;
  /** AUDIT_CHECKPOINT_INTERVAL: and at least this often while it has entries newer than its latest. */
  checkpointIntervalMs: number;
  /** AUDIT_DISPATCH: write checkpoints and deliver audit streams in this process (main.ts). */
  dispatch: boolean;
  /** AUDIT_STREAM_TIMEOUT_MS: bound on one batch sent to a stream's sink (connect, reply, body). */
  streamTimeoutMs: number;
}

export interface WebhookSettings {
  /** Bound on one delivery attempt (connect, reply, body). */
  timeoutMs: number;
  /** Attempts per delivery before it is marked failed. */
  maxAttempts: number;
  /** Run the dispatcher in this process (main.ts); off leaves delivery to other processes. */
  dispatch: boolean;
  /** Deliveries in flight at once in one process. */
  concurrency: number;
  /** Deliveries in flight at once to one endpoint (so a stuck endpoint cannot take every slot). */
  endpointConcurrency: number;
  /** How often an idle dispatcher looks for due deliveries. */
  pollMs: number;
}

export interface MailSettings {
  /** SMTP_URL (`smtp://user:pass@host:587`, `smtps://…:465`): a secret, never logged. Unset: `.eml` files in `dir`. */
  smtpUrl: string | undefined;
  /** MAIL_FROM: the From header, e.g. `"Acme Control Plane" <no-reply@acme.example>`. */
  from: string;
  /** MAIL_DIR: where messages are written as `.eml` files when no SMTP server is set. */
  dir: string;
  /** APP_BASE_URL: where links in messages point (`{appBaseUrl}/verify-email?token=…`); default PUBLIC_BASE_URL. */
  appBaseUrl: string;
  /** Attempts per message before it is marked failed. */
  maxAttempts: number;
  /** Run mail sending in this process (main.ts); off leaves it to other processes. */
  dispatch: boolean;
  /** Messages in flight at once in one process (also the SMTP connection pool's size). */
  concurrency: number;
  /** How often an idle runner looks for due messages (a server database also wakes it at commit). */
  pollMs: number;
  /** Bound on one SMTP exchange (connect, greeting, each command). */
  timeoutMs: number;
}

export class SettingsError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new SettingsError(`${name} must be a whole number >= ${min}, got "${raw}"`);
  return Number(raw);
}

/** The words an on/off setting accepts (lower case). */
const ON_WORDS = ['1', 'true', 'on', 'yes'];
const OFF_WORDS = ['0', 'false', 'off', 'no'];

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (ON_WORDS.includes(raw)) return true;
  if (OFF_WORDS.includes(raw)) return false;
  throw new SettingsError(`${name} must be on/off (true/false), got "${env[name]}"`);
}

/** false, how many proxies stand in front of the service, or their addresses (Express's forms). */
export type TrustProxy = false | number | string[];

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY in the forms of Express's `trust proxy` that name the proxies: a hop count (`1`: one
 * load balancer) or addresses, CIDRs and proxy-addr's names (`10.0.0.0/8, loopback`). `on`/`true`
 * is refused: it would take the left-most X-Forwarded-For entry, which the client writes itself.
 */
function trustProxy(env: Env): TrustProxy {
  const raw = (env.TRUST_PROXY ?? '').trim();
  const lower = raw.toLowerCase();
  if (['', '0', 'off', 'false', 'no'].includes(lower)) return false;
  if (['on', 'true', 'yes'].includes(lower)) {
    throw new SettingsError(
      `TRUST_PROXY=${raw} would trust the client's own left-most X-Forwarded-For entry, so per-IP limits and audit IPs could be forged; give the number of proxies in front of the service (e.g. 1) or their addresses (e.g. 10.0.0.0/8, loopback)`,
    );
  }
  if (/^\d+$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((e) => e.trim()).filter(Boolean);
  for (const entry of entries) {
    if (PROXY_NAMES.has(entry.toLowerCase())) continue;
    try {
      if (entry.includes('/')) ipaddr.parseCIDR(entry);
      else ipaddr.parse(entry);
    } catch {
      throw new SettingsError(`TRUST_PROXY must be a hop count or proxy addresses (IPs, CIDRs, loopback, linklocal, uniquelocal); "${entry}" is none of these`);
    }
  }
  return entries.map((e) => (PROXY_NAMES.has(e.toLowerCase()) ? e.toLowerCase() : e));
}

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  try {
    const parsed = new URL(raw);
    if (!['http:', 'https:'].includes(parsed.protocol)) throw new Error();
  } catch {
    throw new SettingsError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

const DURATION = /^(\d+)\s*(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export interface OrgLifecycleSettings {
  /** ORG_DELETION_GRACE: from a deletion request to its purge; the owner may restore until then. */
  graceMs: number;
  /** ORG_LIFECYCLE_DISPATCH: mail deletion notices and purge from this process's job runner. */
  dispatch: boolean;
  /** ORG_PURGE_BATCH: rows removed per statement (each its own short transaction) while purging. */
  purgeBatch: number;
}

/** Durations accept a number of seconds or a unit: `30d`, `12h`, `900s`, `500ms`. */
function duration(env: Env, name: string, fallbackMs: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallbackMs;
  const match = DURATION.exec(raw.trim());
  if (!match || Number(match[1]) <= 0) throw new SettingsError(`${name} must be a positive duration like 30d, 12h or 3600 (seconds), got "${raw}"`);
  return Number(match[1]) * UNIT_MS[match[2] ?? 's']!;
}

export interface OAuthSettings {
  /** ACCESS_TOKEN_TTL: an access token's lifetime (default 10 minutes, at most 1 hour). */
  accessTokenTtlSeconds: number;
  /** REFRESH_TOKEN_TTL: a refresh token's lifetime (default 30 days). */
  refreshTokenTtlSeconds: number;
  /** OAUTH_CIMD: clients identified by a metadata document URL (on by default). */
  clientIdMetadataDocuments: boolean;
  /** OAUTH_DCR: dynamic client registration, `off` (default) or `open`. */
  dynamicRegistration: 'off' | 'open';
  /** OAUTH_DEVICE_FLOW: the device authorization grant (on by default). */
  deviceFlow: boolean;
}

const MAX_ACCESS_TOKEN_TTL_SECONDS = 3600;

function oauth(env: Env): OAuthSettings {
  const accessTokenTtlMs = duration(env, 'ACCESS_TOKEN_TTL', 10 * UNIT_MS.m!);
  if (accessTokenTtlMs > MAX_ACCESS_TOKEN_TTL_SECONDS * 1000) throw new SettingsError(`ACCESS_TOKEN_TTL must be at most 1h, got "${env.ACCESS_TOKEN_TTL}"`);
  if (accessTokenTtlMs < 1000) throw new SettingsError(`ACCESS_TOKEN_TTL must be at least 1 second, got "${env.ACCESS_TOKEN_TTL}"`);
  const refreshTokenTtlMs = duration(env, 'REFRESH_TOKEN_TTL', 30 * UNIT_MS.d!);
  if (refreshTokenTtlMs < 1000) throw new SettingsError(`REFRESH_TOKEN_TTL must be at least 1 second, got "${env.REFRESH_TOKEN_TTL}"`);
  const dcr = (env.OAUTH_DCR || 'off').trim().toLowerCase();
  if (dcr !== 'off' && dcr !== 'open') throw new SettingsError(`OAUTH_DCR must be off or open, got "${env.OAUTH_DCR}"`);
  return {
    accessTokenTtlSeconds: Math.floor(accessTokenTtlMs / 1000),
    refreshTokenTtlSeconds: Math.floor(refreshTokenTtlMs / 1000),
    clientIdMetadataDocuments: bool(env, 'OAUTH_CIMD', true),
    dynamicRegistration: dcr,
    deviceFlow: bool(env, 'OAUTH_DEVICE_FLOW', true),
  };
}

function emailVerification(env: Env): 'required' | 'optional' {
  const raw = (env.EMAIL_VERIFICATION || 'required').trim().toLowerCase();
  if (raw !== 'required' && raw !== 'optional') throw new SettingsError(`EMAIL_VERIFICATION must be required or optional, got "${env.EMAIL_VERIFICATION}"`);
  return raw;
}

/** `10/15m` (10 per 15 minutes), `30/1h`, or `off`. */
function rateLimit(env: Env, name: string, fallback: string): RateLimitRule | null {
  const raw = (env[name] || fallback).trim();
  if (raw.toLowerCase() === 'off') return null;
  const [count, window] = raw.split('/');
  const match = window === undefined ? null : DURATION.exec(window.trim());
  if (!count || !/^\d+$/.test(count.trim()) || Number(count) < 1 || !match || Number(match[1]) <= 0) {
    throw new SettingsError(`${name} must look like 10/15m (points per window) or off, got "${raw}"`);
  }
  return { points: Number(count), windowMs: Number(match[1]) * UNIT_MS[match[2] ?? 's']! };
}

/** SMTP_URL: smtp:// or smtps://; the value is a secret, so an error never repeats it. */
function smtpUrl(env: Env): string | undefined {
  const raw = env.SMTP_URL || undefined;
  if (raw === undefined) return undefined;
  let parsed: URL | null = null;
  try {
    parsed = new URL(raw);
  } catch {
    // reported below without the value
  }
  if (!parsed || !['smtp:', 'smtps:'].includes(parsed.protocol) || !parsed.hostname) {
    throw new SettingsError('SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://… (the value is not shown: it may hold a password)');
  }
  return raw;
}

function mailFrom(env: Env): string {
  const raw = (env.MAIL_FROM || '"Control Plane" <no-reply@localhost>').trim();
  if (!/^[^\r\n]*@[^\r\n]*$/.test(raw)) throw new SettingsError(`MAIL_FROM must be an address like "Acme" <no-reply@acme.example>, got "${raw}"`);
  return raw;
}

function networks(env: Env, name: string): string[] {
  try {
    return parseAllowedNetworks(env[name]);
  } catch (err) {
    throw new SettingsError(`${name} must be comma-separated CIDRs: ${(err as Error).message}`);
  }
}

/**
 * `host[:port]` list of IP addresses (what node's Resolver#setServers takes): `1.1.1.1`,
 * `127.0.0.1:5353`, `::1`, `[::1]:5353`.
 */
function dnsServers(env: Env): string[] {
  const entries = (env.DNS_SERVERS ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  for (const entry of entries) {
    const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry) ?? (isIP(entry) === 6 ? [entry, entry] : /^([^:]+)(?::(\d{1,5}))?$/.exec(entry));
    const host = m?.[1];
    const port = m?.[2];
    if (!host || isIP(host) === 0 || (port !== undefined && (Number(port) < 1 || Number(port) > 65535))) {
      throw new SettingsError(`DNS_SERVERS must be comma-separated IP[:port] entries (e.g. 127.0.0.1:5353, [::1]:53), got "${entry}"`);
    }
  }
  return entries;
}

/** Comma-separated origins (`https://app.example.com`): scheme, host and port only. */
function origins(env: Env, name: string): string[] {
  const entries = (env[name] ?? '').split(',').map((e) => e.trim()).filter(Boolean);
  return entries.map((entry) => {
    let parsed: URL;
    try {
      parsed = new URL(entry);
    } catch {
      throw new SettingsError(`${name} must be comma-separated origins like https://app.example.com, got "${entry}"`);
    }
    if (!['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== entry.replace(/\/+$/, '')) {
      throw new SettingsError(`${name} must be comma-separated origins like https://app.example.com (no path), got "${entry}"`);
    }
    return parsed.origin;
  });
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function passwordHashCost(env: Env): PasswordHashCost {
  const value = env.PASSWORD_HASH_COST || 'standard';
  if (value !== 'standard' && value !== 'test') throw new SettingsError(`PASSWORD_HASH_COST must be standard or test, got "${value}"`);
  return value;
}

/**
 * AUDIT_BENCH_DISABLE, the baselines of bench scenario 8: `on` leaves out the audit entry and the
 * chain head (the change's event is still written: the audit entry's own cost is what the scenario
 * measures), `entries-and-events` the event and its deliveries too.
 */
function auditBenchDisable(env: Env): AuditBenchSkip {
  const raw = (env.AUDIT_BENCH_DISABLE ?? '').toLowerCase();
  if (raw === 'entries-and-events') return raw;
  if (ON_WORDS.includes(raw)) return 'entries';
  if (raw === '' || OFF_WORDS.includes(raw)) return 'off';
  throw new SettingsError(`AUDIT_BENCH_DISABLE must be off, on or entries-and-events, got "${env.AUDIT_BENCH_DISABLE}"`);
}

function scimMaxResults(env: Env): number {
  const value = int(env, 'SCIM_MAX_RESULTS', 200, 1);
  if (value > 1000) throw new SettingsError(`SCIM_MAX_RESULTS must be at most 1000, got "${env.SCIM_MAX_RESULTS}"`);
  return value;
}

/** Defaults from PUBLIC_BASE_URL: its host is the relying party id, its origin the one allowed origin. */
function webauthn(env: Env, publicBaseUrl: string): Settings['webauthn'] {
  const base = new URL(publicBaseUrl);
  const id = env.WEBAUTHN_RP_ID || base.hostname;
  const allowed = origins(env, 'WEBAUTHN_ORIGINS');
  const list = allowed.length > 0 ? allowed : [base.origin];
  for (const origin of list) {
    const host = new URL(origin).hostname;
    if (host !== id && !host.endsWith(`.${id}`)) throw new SettingsError(`WEBAUTHN_ORIGINS: ${origin} is not ${id} or a subdomain of it (WEBAUTHN_RP_ID)`);
  }
  return { id, name: env.WEBAUTHN_RP_NAME || 'Organization Control Plane', origins: list };
}

/** HOST: an IP address or `localhost` (what the listener binds; a name could resolve anywhere). */
function listenHost(env: Env): string {
  const raw = (env.HOST ?? '').trim();
  if (raw === '') return '127.0.0.1';
  if (raw.toLowerCase() === 'localhost' || isIP(raw) !== 0) return raw;
  throw new SettingsError(`HOST must be an IP address to listen on (127.0.0.1, 0.0.0.0, ::) or localhost, got "${raw}"`);
}

function isLoopback(host: string): boolean {
  return host.toLowerCase() === 'localhost' || ipaddr.process(host).range() === 'loopback';
}

/**
 * Bootstrap without BOOTSTRAP_TOKEN makes the first caller of POST /v1/bootstrap a platform admin:
 * fine on loopback (whoever can call it is on this machine), refused on any other address unless
 * BOOTSTRAP_ALLOW_OPEN says the operator means it.
 */
function bootstrapAllowOpen(env: Env, host: string, token: string | undefined): boolean {
  const allowed = bool(env, 'BOOTSTRAP_ALLOW_OPEN', false);
  if (!token && !allowed && !isLoopback(host)) {
    throw new SettingsError(
      `HOST=${host} is reachable from other machines and BOOTSTRAP_TOKEN is unset: the first caller of POST /v1/bootstrap would become platform admin. Set BOOTSTRAP_TOKEN (then send it as x-bootstrap-token), listen on loopback (HOST=127.0.0.1), or set BOOTSTRAP_ALLOW_OPEN=on`,
    );
  }
  return allowed;
}

function metricsPort(env: Env, apiPort: number): number | undefined {
  if (!env.METRICS_PORT) return undefined;
  const port = int(env, 'METRICS_PORT', 0, 1);
  if (port > 65535) throw new SettingsError(`METRICS_PORT must be at most 65535, got "${env.METRICS_PORT}"`);
  if (port === apiPort) throw new SettingsError('METRICS_PORT must differ from PORT (metrics are never served with the API)');
  return port;
}

export function loadSettings(env: Env = process.env): Settings {
  const port = int(env, 'PORT', 3000);
  if (port > 65535) throw new SettingsError(`PORT must be at most 65535, got "${env.PORT}"`);
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new SettingsError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new SettingsError('DATABASE_URL must be a postgres:// URL');
  const secretKey = env.SECRET_KEY || undefined;
  if (secretKey !== undefined && secretKey.length < 32) throw new SettingsError('SECRET_KEY must be at least 32 characters');
  const dataDir = env.DATA_DIR || './data';
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL', `http://localhost:${port}`);
  const host = listenHost(env);
  const bootstrapToken = env.BOOTSTRAP_TOKEN || undefined;
  return {
    port,
    host,
    databaseUrl,
    dataDir,
    secretKey,
    publicBaseUrl,
    bootstrapToken,
    bootstrapAllowOpen: bootstrapAllowOpen(env, host, bootstrapToken),
    sessionTtlMs: duration(env, 'SESSION_TTL', 30 * UNIT_MS.d!),
    freshSessionMaxAgeMs: duration(env, 'FRESH_SESSION_MAX_AGE', 15 * UNIT_MS.m!),
    orgLifecycle: {
      graceMs: duration(env, 'ORG_DELETION_GRACE', 7 * UNIT_MS.d!),
      dispatch: bool(env, 'ORG_LIFECYCLE_DISPATCH', true),
      purgeBatch: int(env, 'ORG_PURGE_BATCH', 1000, 1),
    },
    planGating: bool(env, 'PLAN_GATING', true),
    suiteGraphBaseUrl: url(env, 'SUITE_GRAPH_BASE_URL', 'https://graph.microsoft.com/v1.0'),
    suiteLoginBaseUrl: url(env, 'SUITE_LOGIN_BASE_URL', 'https://login.microsoftonline.com'),
    suiteTimeoutMs: int(env, 'SUITE_TIMEOUT_MS', 30_000, 1),
    mcpOAuthTimeoutMs: int(env, 'MCP_OAUTH_TIMEOUT_MS', 10_000, 1),
    workerRuntimeTimeoutMs: int(env, 'WORKER_RUNTIME_TIMEOUT_MS', 5_000, 1),
    llmProviderTimeoutMs: int(env, 'LLM_PROVIDER_TIMEOUT_MS', 10_000, 1),
    outboundAllowedNetworks: networks(env, 'OUTBOUND_ALLOWED_NETWORKS'),
    workerStaleAfterMs: duration(env, 'WORKER_STALE_AFTER', 120_000),
    logLevel,
    metricsPort: metricsPort(env, port),
    metricsHost: env.METRICS_HOST || '127.0.0.1',
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 1),
    corsOrigins: (env.CORS_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 30_000, 1),
    headersTimeoutMs: int(env, 'HEADERS_TIMEOUT_MS', 10_000, 1),
    trustProxy: trustProxy(env),
    auditRetentionDays: int(env, 'AUDIT_RETENTION_DAYS', 365, 1),
    passwordHashCost: passwordHashCost(env),
    auditBenchDisable: auditBenchDisable(env),
    audit: {
      checkpointEvery: int(env, 'AUDIT_CHECKPOINT_EVERY', 1000, 1),
      checkpointIntervalMs: duration(env, 'AUDIT_CHECKPOINT_INTERVAL', UNIT_MS.h!),
      dispatch: bool(env, 'AUDIT_DISPATCH', true),
      streamTimeoutMs: int(env, 'AUDIT_STREAM_TIMEOUT_MS', 30_000, 1),
    },
    webhooks: {
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 1),
      maxAttempts: int(env, 'WEBHOOK_MAX_ATTEMPTS', 8, 1),
      dispatch: bool(env, 'WEBHOOK_DISPATCH', true),
      concurrency: int(env, 'WEBHOOK_CONCURRENCY', 64, 1),
      endpointConcurrency: int(env, 'WEBHOOK_ENDPOINT_CONCURRENCY', 8, 1),
      pollMs: int(env, 'WEBHOOK_POLL_MS', 100, 10),
    },
    mail: {
      smtpUrl: smtpUrl(env),
      from: mailFrom(env),
      dir: env.MAIL_DIR || (databaseUrl ? './mail' : `${dataDir.replace(/\/+$/, '')}/mail`),
      appBaseUrl: url(env, 'APP_BASE_URL', publicBaseUrl),
      maxAttempts: int(env, 'MAIL_MAX_ATTEMPTS', 6, 1),
      dispatch: bool(env, 'MAIL_DISPATCH', true),
      concurrency: int(env, 'MAIL_CONCURRENCY', 4, 1),
      pollMs: int(env, 'MAIL_POLL_MS', 1000, 10),
      timeoutMs: int(env, 'MAIL_TIMEOUT_MS', 15_000, 1),
    },
    scimMaxResults: scimMaxResults(env),
    dnsServers: dnsServers(env),
    ssoReturnOrigins: origins(env, 'SSO_RETURN_ORIGINS'),
    oauth: oauth(env),
    rateLimits: {
      signInEmail: rateLimit(env, 'RATE_LIMIT_SIGN_IN_EMAIL', '10/15m'),
      signInIp: rateLimit(env, 'RATE_LIMIT_SIGN_IN_IP', '100/15m'),
      secondFactorUser: rateLimit(env, 'RATE_LIMIT_SECOND_FACTOR_USER', '10/15m'),
      signUpIp: rateLimit(env, 'RATE_LIMIT_SIGN_UP_IP', '30/1h'),
      invitationAcceptUser: rateLimit(env, 'RATE_LIMIT_INVITATION_ACCEPT_USER', '20/15m'),
      invitationAcceptIp: rateLimit(env, 'RATE_LIMIT_INVITATION_ACCEPT_IP', '100/15m'),
      invitationResend: rateLimit(env, 'RATE_LIMIT_INVITATION_RESEND', '5/1h'),
      bootstrapIp: rateLimit(env, 'RATE_LIMIT_BOOTSTRAP_IP', '10/15m'),
      ssoStartIp: rateLimit(env, 'RATE_LIMIT_SSO_START_IP', '300/15m'),
      ssoIp: rateLimit(env, 'RATE_LIMIT_SSO_IP', '100/15m'),
      verifyResendUserMinute: rateLimit(env, 'RATE_LIMIT_VERIFY_RESEND_USER_MINUTE', '1/1m'),
      verifyResendUserHour: rateLimit(env, 'RATE_LIMIT_VERIFY_RESEND_USER_HOUR', '5/1h'),
      emailChangeUser: rateLimit(env, 'RATE_LIMIT_EMAIL_CHANGE_USER', '5/1h'),
      mailRecipient: rateLimit(env, 'RATE_LIMIT_MAIL_RECIPIENT', '20/1h'),
      invitationOrg: rateLimit(env, 'RATE_LIMIT_INVITATION_ORG', '100/1h'),
      passwordResetEmail: rateLimit(env, 'RATE_LIMIT_PASSWORD_RESET_EMAIL', '5/1h'),
      passwordResetIp: rateLimit(env, 'RATE_LIMIT_PASSWORD_RESET_IP', '50/15m'),
    },
    emailVerification: emailVerification(env),
    webauthn: webauthn(env, publicBaseUrl),
  };
}

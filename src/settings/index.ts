import type { AuditBenchSkip } from '../domain/audit-context';
import type { Settings } from './types';
import { bool, duration, int, networks, origins, rateLimit, SettingsError, UNIT_MS, url, ON_WORDS, OFF_WORDS, type Env } from './values';
import { bootstrapAllowOpen, dnsServers, listenHost, metricsPort, trustProxy } from './network';
import { emailVerification, oauth, passwordHashCost, webauthn } from './identity';
import { mailFrom, smtpUrl } from './mail';

/**
 * The settings entry point: loadSettings reads the environment once at start (the parsers in
 * ./values.ts, the listener and trust in ./network.ts, accounts and tokens in ./identity.ts, the
 * mail sender in ./mail.ts; the shapes in ./types.ts).
 */
export { SettingsError } from './values';
export type { AuditSettings, MailSettings, OAuthSettings, OrgLifecycleSettings, RateLimitRule, RateLimitSettings, Settings, TrustProxy, WebhookSettings } from './types';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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
      clientRegistrationIp: rateLimit(env, 'RATE_LIMIT_CLIENT_REGISTRATION_IP', '20/1h'),
    },
    emailVerification: emailVerification(env),
    webauthn: webauthn(env, publicBaseUrl),
  };
}

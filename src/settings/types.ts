import type { PasswordHashCost } from '../lib/crypto';
import type { AuditBenchSkip } from '../domain/audit-context';

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
  /** Dynamic client registrations per IP (`POST /oauth/reg` with OAUTH_DCR=open): each stores a client for 30 days. */
  clientRegistrationIp: RateLimitRule | null;
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

/** false, how many proxies stand in front of the service, or their addresses (Express's forms). */
export type TrustProxy = false | number | string[];

export interface OrgLifecycleSettings {
  /** ORG_DELETION_GRACE: from a deletion request to its purge; the owner may restore until then. */
  graceMs: number;
  /** ORG_LIFECYCLE_DISPATCH: mail deletion notices and purge from this process's job runner. */
  dispatch: boolean;
  /** ORG_PURGE_BATCH: most rows removed per statement (each its own short transaction) while purging; fewer when slow. */
  purgeBatch: number;
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

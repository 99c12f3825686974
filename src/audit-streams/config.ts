import { checkTenantUrl, type Outbound } from '../outbound';
import { Invalid } from '../lib/errors';
import { newWebhookSecret } from '../webhooks/signing';
import type { StreamType } from './tables';

/**
 * Each sink's settings, split in two: what is shown (`config`, stored as JSON) and what is
 * write-only (`secrets`, sealed with SECRET_KEY and never answered, logged or audited). A PATCH
 * of `config` replaces the shown fields and keeps each secret it omits.
 */
export interface HttpsSecrets {
  /** The Standard Webhooks signing secret (`whsec_…`), made by the service. */
  secret: string;
}
export interface SplunkSecrets {
  token: string;
}
export interface DatadogSecrets {
  apiKey: string;
}
export interface S3Secrets {
  secretAccessKey: string;
}
export type StreamSecrets = Partial<HttpsSecrets & SplunkSecrets & DatadogSecrets & S3Secrets>;

interface TypeRules {
  /** Fields shown in `config`: required ones first. */
  required: readonly string[];
  optional: readonly string[];
  /** Write-only fields the caller gives (none for https, whose secret the service makes). */
  secrets: readonly string[];
  /** Fields holding a URL the service calls: checked against the egress policy. */
  urls: readonly string[];
}

export const TYPE_RULES: Record<StreamType, TypeRules> = {
  https: { required: ['url'], optional: [], secrets: [], urls: ['url'] },
  splunk_hec: { required: ['url'], optional: ['index'], secrets: ['token'], urls: ['url'] },
  datadog: { required: ['site'], optional: ['url'], secrets: ['apiKey'], urls: ['url'] },
  s3: { required: ['region', 'bucket', 'accessKeyId'], optional: ['endpoint', 'prefix'], secrets: ['secretAccessKey'], urls: ['endpoint'] },
};

export interface SplitConfig {
  config: Record<string, unknown>;
  secrets: StreamSecrets;
  /** The https signing secret when one was made now (shown once). */
  madeSecret?: string;
}

/**
 * Checks a stream's config for its type and splits it. `kept` holds the stored secrets on a
 * PATCH: a secret the input omits keeps its stored value; on create every secret is required.
 */
export function splitConfig(outbound: Outbound, type: StreamType, input: Record<string, unknown>, kept: StreamSecrets | null): SplitConfig {
  const rules = TYPE_RULES[type];
  const known = new Set([...rules.required, ...rules.optional, ...rules.secrets]);
  for (const field of Object.keys(input)) {
    if (!known.has(field)) throw Invalid.at(['body', 'config', field], `is not a setting of a ${type} stream`);
  }
  for (const field of rules.required) {
    if (input[field] === undefined) throw Invalid.at(['body', 'config', field], `is required for a ${type} stream`);
  }
  for (const field of rules.urls) {
    if (typeof input[field] === 'string') checkTenantUrl(outbound.policy, input[field], ['body', 'config', field], { httpsOnly: true });
  }
  const config: Record<string, unknown> = {};
  for (const field of [...rules.required, ...rules.optional]) if (input[field] !== undefined) config[field] = input[field];
  const secrets: StreamSecrets = {};
  for (const field of rules.secrets) {
    const value = input[field] ?? kept?.[field as keyof StreamSecrets];
    if (typeof value !== 'string') throw Invalid.at(['body', 'config', field], `is required for a ${type} stream`);
    secrets[field as keyof StreamSecrets] = value;
  }
  if (type === 'https') {
    if (kept?.secret) return { config, secrets: { secret: kept.secret } };
    const made = newWebhookSecret();
    return { config, secrets: { secret: made }, madeSecret: made };
  }
  return { config, secrets };
}

import { postBatch } from './http-post';
import type { Sink } from './types';

/** Datadog sites and their logs intake (HTTP logs intake v2). */
export const DATADOG_SITES = ['datadoghq.com', 'us3.datadoghq.com', 'us5.datadoghq.com', 'datadoghq.eu', 'ap1.datadoghq.com', 'ap2.datadoghq.com', 'ddog-gov.com'] as const;

export function datadogIntakeUrl(config: Record<string, unknown>): string {
  return typeof config.url === 'string' ? config.url : `https://http-intake.logs.${config.site as string}/api/v2/logs`;
}

/**
 * Datadog's logs intake v2: a JSON array of logs (at most 1000, 5 MB) with `DD-API-KEY`. One log
 * per record; its `message` is the record's JSON, which Datadog parses into attributes. Datadog
 * answers 202 when it accepted the payload and 403 for an invalid key.
 */
export const datadogSink: Sink = async (batch) => {
  const body = JSON.stringify(
    batch.json.map((message) => ({
      ddsource: 'org-control-plane',
      service: 'org-control-plane-audit',
      ddtags: `organization_id:${batch.organizationId}`,
      message,
    })),
  );
  return postBatch(batch.outbound, datadogIntakeUrl(batch.config), { 'dd-api-key': batch.secrets.apiKey!, 'content-type': 'application/json' }, body, batch.timeoutMs);
};

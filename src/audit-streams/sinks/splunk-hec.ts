import { postBatch } from './http-post';
import type { Sink } from './types';

/**
 * Splunk's HTTP Event Collector (`…/services/collector/event`): one HEC event per record,
 * concatenated in one request, with `Authorization: Splunk <token>`. `time` is the record's
 * creation in epoch seconds; `index` only when the stream names one (the token's default index
 * otherwise). HEC answers 401 for a missing or malformed token and 403 for an invalid one.
 */
export const splunkHecSink: Sink = async (batch) => {
  const index = typeof batch.config.index === 'string' ? batch.config.index : undefined;
  // Each event as JSON.stringify({ time, source, sourcetype, index?, event }) writes it, around the record's JSON made once.
  const fields = `"source":"org-control-plane","sourcetype":"_json"${index ? `,"index":${JSON.stringify(index)}` : ''}`;
  const body = batch.records.map((record, i) => `{"time":${JSON.stringify(new Date(record.createdAt).getTime() / 1000)},${fields},"event":${batch.json[i]!}}`).join('\n');
  return postBatch(batch.outbound, batch.config.url as string, { authorization: `Splunk ${batch.secrets.token!}`, 'content-type': 'application/json' }, body, batch.timeoutMs);
};

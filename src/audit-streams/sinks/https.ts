import { webhookHeaders } from '../../webhooks/signing';
import { postBatch } from './http-post';
import type { Sink } from './types';

/**
 * An HTTPS endpoint of the customer's: `{records}` signed as webhooks are (Standard Webhooks
 * headers, docs/webhooks.md). `webhook-id` names the batch by its first and last record, so a
 * retry of the same batch carries the same id.
 */
export const httpsSink: Sink = async (batch) => {
  // The same text as JSON.stringify({ records }), from each record's JSON made once.
  const body = `{"records":[${batch.json.join(',')}]}`;
  const id = `${batch.records[0]!.id}-${batch.records[batch.records.length - 1]!.id}`;
  const headers = webhookHeaders([batch.secrets.secret!], id, Math.floor(batch.now.getTime() / 1000), body);
  return postBatch(batch.outbound, batch.config.url as string, { 'content-type': 'application/json', ...headers }, body, batch.timeoutMs);
};

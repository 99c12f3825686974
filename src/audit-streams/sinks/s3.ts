import { Readable } from 'node:stream';
import { OutboundError, type Outbound } from '../../outbound';
import type { Sink } from './types';

/** The largest reply read from the store (an S3 reply to PutObject is a few hundred bytes). */
const MAX_REPLY_BYTES = 64 * 1024;

interface SdkRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, string | string[] | null>;
  headers: Record<string, string>;
  body?: unknown;
}

/**
 * The SDK's HTTP handler replaced by the egress policy's client (docs/egress.md): the
 * store's address is checked at connect time like every tenant URL's, redirects are not followed
 * and the timeout bounds the exchange. The SDK signs the request (SigV4) before it gets here.
 */
class OutboundHandler {
  readonly metadata = { handlerProtocol: 'http/1.1' };
  constructor(
    private readonly outbound: Outbound,
    private readonly timeoutMs: number,
  ) {}

  async handle(request: SdkRequest) {
    const query = Object.entries(request.query ?? {})
      .flatMap(([k, v]) => (v === null ? [encodeURIComponent(k)] : (Array.isArray(v) ? v : [v]).map((x) => `${encodeURIComponent(k)}=${encodeURIComponent(x)}`)))
      .join('&');
    const url = `${request.protocol}//${request.hostname}${request.port ? `:${request.port}` : ''}${request.path}${query ? `?${query}` : ''}`;
    // undici sets Host from the URL (the same value the SDK signed).
    const headers = Object.fromEntries(Object.entries(request.headers).filter(([k]) => k.toLowerCase() !== 'host'));
    const body = typeof request.body === 'string' || request.body === undefined ? request.body : Buffer.from(request.body as Uint8Array).toString('utf8');
    const res = await this.outbound.request(url, { method: request.method as 'PUT', headers, body, timeoutMs: this.timeoutMs, maxBytes: MAX_REPLY_BYTES });
    const flat: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
    return { response: { statusCode: res.status, reason: '', headers: flat, body: Readable.from([res.body]) } };
  }

  updateHttpClientConfig(): void {}
  httpHandlerConfigs() {
    return {};
  }
  destroy(): void {}
}

/** The object key of a batch: `<prefix><organizationId>/<first record id>-<last record id>.ndjson`. */
export function batchKey(prefix: string, organizationId: string, firstId: string, lastId: string): string {
  return `${prefix}${organizationId}/${firstId}-${lastId}.ndjson`;
}

/**
 * Any S3-compatible store: one NDJSON object per batch, PutObject signed with SigV4 by
 * @aws-sdk/client-s3. A retry of the same batch writes the same key (the same records), so the
 * store keeps one copy. The SDK's own retries are off (the stream's backoff retries), and its
 * request checksums are sent only where an operation requires them: several S3-compatible stores
 * refuse the newer default ones. A 401/403 (a wrong key, a refused signature, access denied)
 * pauses the stream like the other sinks'.
 */
export const s3Sink: Sink = async (batch) => {
  // Loaded on a stream's first batch: every process loads the job runner, few organizations stream to S3,
  // and loading the SDK costs ~150 ms, ~4 MB of heap and ~20 MB resident that nothing else needs.
  const { PutObjectCommand, S3Client, S3ServiceException } = await import('@aws-sdk/client-s3');
  const endpoint = typeof batch.config.endpoint === 'string' ? batch.config.endpoint : undefined;
  const client = new S3Client({
    region: batch.config.region as string,
    endpoint,
    forcePathStyle: endpoint !== undefined,
    credentials: { accessKeyId: batch.config.accessKeyId as string, secretAccessKey: batch.secrets.secretAccessKey! },
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: new OutboundHandler(batch.outbound, batch.timeoutMs),
  });
  const body = batch.json.map((line) => `${line}\n`).join('');
  const key = batchKey(typeof batch.config.prefix === 'string' ? batch.config.prefix : '', batch.organizationId, batch.records[0]!.id, batch.records[batch.records.length - 1]!.id);
  try {
    await client.send(new PutObjectCommand({ Bucket: batch.config.bucket as string, Key: key, Body: body, ContentType: 'application/x-ndjson' }));
    return { ok: true };
  } catch (err) {
    if (err instanceof OutboundError) return { ok: false, refused: false, error: err.message };
    const status = err instanceof S3ServiceException ? err.$metadata.httpStatusCode : undefined;
    const code = err instanceof S3ServiceException ? err.name : 'the store';
    if (status === 401 || status === 403) return { ok: false, refused: true, error: `the store refused the stream's credentials (${status} ${code})` };
    return { ok: false, refused: false, error: status ? `the store answered ${status} ${code}` : 'the batch could not be stored' };
  } finally {
    client.destroy();
  }
};

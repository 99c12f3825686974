import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';

/**
 * A local S3 for tests: @20minutes/s3rver, a maintained fork of s3rver whose authentication
 * recomputes SigV4 signatures (s3rver 3.7 accepts any v4 signature of a known key id), so a wrong
 * secret key is refused with 403 SignatureDoesNotMatch as S3 refuses it. The test reads what was
 * stored with its own client; the keys come from the server's directory, because the fork's
 * signature check refuses the SDK's ListObjects requests (their query string), not GetObject's.
 */
// The fork ships no type declarations.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const S3rver = require('@20minutes/s3rver') as new (options: Record<string, unknown>) => { run(): Promise<{ port: number }>; close(): Promise<void> };

export const S3_ACCESS_KEY_ID = 'S3RVER';
export const S3_SECRET_ACCESS_KEY = 'S3RVER';

export interface FakeS3 {
  endpoint: string;
  /** Every object of the bucket, key → body, listed in key order. */
  objects(bucket: string): Promise<Map<string, string>>;
  close(): Promise<void>;
}

export async function startFakeS3(buckets: string[]): Promise<FakeS3> {
  const directory = mkdtempSync(path.join(tmpdir(), 's3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: buckets.map((name) => ({ name })) });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY_ID, secretAccessKey: S3_SECRET_ACCESS_KEY } });
  return {
    endpoint,
    async objects(bucket) {
      const out = new Map<string, string>();
      const root = path.join(directory, bucket);
      const keys = (readdirSync(root, { recursive: true }) as string[])
        .filter((f) => f.endsWith('._S3rver_object'))
        .map((f) => f.slice(0, -'._S3rver_object'.length).split(path.sep).join('/'))
        .sort();
      for (const key of keys) {
        const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        out.set(key, await got.Body!.transformToString());
      }
      return out;
    },
    async close() {
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

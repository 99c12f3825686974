import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ZipFile } from 'yazl';

/** Bytes of the zip kept per stored chunk. */
export const CHUNK_BYTES = 1024 * 1024;

export interface ZipEntry {
  name: string;
  /** NDJSON text, complete lines per piece. */
  lines: () => AsyncIterable<string>;
}

export interface WrittenFile {
  name: string;
  entries: number;
  sha256: string;
}

export interface WrittenZip {
  size: number;
  sha256: string;
  files: WrittenFile[];
}

/**
 * Streams a zip with `yazl` (deflate; zip64 when it grows past 4 GiB) of the entries, in order,
 * then the manifest made from what was written (each file's line count and SHA-256), handing the
 * zip to `sink` in pieces of about CHUNK_BYTES as it is made. Memory holds one piece and one
 * batch of rows whatever the size: yazl reads an entry as the sink takes its output (`for await`
 * pauses the output while a piece is stored, and the pipes behind it wait). A failure of an
 * entry's reader, of yazl or of the sink rejects, and the output is torn down.
 */
export async function writeZip(input: { entries: ZipEntry[]; mtime: Date; manifest: (files: WrittenFile[]) => Buffer; chunkBytes?: number }, sink: (piece: Buffer) => Promise<void>): Promise<WrittenZip> {
  const zip = new ZipFile();
  const output = zip.outputStream as Readable;
  let fail!: (err: unknown) => void;
  const failure = new Promise<never>((_, reject) => (fail = reject));
  failure.catch(() => undefined);
  zip.on('error', (err: unknown) => fail(err));
  const digest = createHash('sha256');
  let size = 0;
  const drained = (async () => {
    let held: Buffer[] = [];
    let heldBytes = 0;
    for await (const piece of output) {
      const buffer = piece as Buffer;
      digest.update(buffer);
      size += buffer.length;
      held.push(buffer);
      heldBytes += buffer.length;
      if (heldBytes >= (input.chunkBytes ?? CHUNK_BYTES)) {
        await sink(Buffer.concat(held));
        held = [];
        heldBytes = 0;
      }
    }
    if (heldBytes > 0) await sink(Buffer.concat(held));
  })();
  drained.catch((err: unknown) => fail(err));
  const ended = drained.then(() => Promise.reject(new Error('the zip ended before its last entry')));
  ended.catch(() => undefined);
  try {
    const files: WrittenFile[] = [];
    for (const entry of input.entries) {
      const hash = createHash('sha256');
      let count = 0;
      const source = entry.lines;
      const reader = Readable.from(
        (async function* () {
          for await (const text of source()) {
            const bytes = Buffer.from(text, 'utf8');
            hash.update(bytes);
            for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) count++;
            yield bytes;
          }
        })(),
      );
      reader.on('error', (err) => fail(err));
      zip.addReadStream(reader, entry.name, { mtime: input.mtime });
      await Promise.race([finished(reader), failure, ended]);
      files.push({ name: entry.name, entries: count, sha256: hash.digest('hex') });
    }
    zip.addBuffer(input.manifest(files), 'manifest.json', { mtime: input.mtime });
    zip.end();
    await Promise.race([drained, failure]);
    return { size, sha256: digest.digest('hex'), files };
  } catch (err) {
    output.destroy();
    throw err;
  }
}

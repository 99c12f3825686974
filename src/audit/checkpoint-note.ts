import { sign, verify } from 'node:crypto';
import type { AuditKey } from './signing-key';

/**
 * Checkpoints as C2SP signed notes (c2sp.org/signed-note) whose text follows the tlog-checkpoint
 * layout (c2sp.org/tlog-checkpoint): three lines — the origin, the entry count in decimal, the
 * chain head (the last entry's SHA-256) in standard base64 — each ending in a newline. The note is
 * that text, a blank line, and one signature line: an em dash, a space, the key name, a space,
 * and base64 of (the 4-byte key id ‖ the Ed25519 signature of the text). docs/audit.md says how a
 * customer checks one; the head is a hash chain's, so it is checked by replaying the chain.
 */
export interface CheckpointBody {
  origin: string;
  count: bigint;
  /** The head hash as audit_logs stores it (hex). */
  headHex: string;
}

export class NoteRefused extends Error {}

/** `<PUBLIC_BASE_URL host[:port]>/audit/<organizationId>`. */
export function checkpointOrigin(publicBaseUrl: string, organizationId: string): string {
  return `${new URL(publicBaseUrl).host}/audit/${organizationId}`;
}

export function checkpointText(body: CheckpointBody): string {
  return `${body.origin}\n${body.count.toString()}\n${Buffer.from(body.headHex, 'hex').toString('base64')}\n`;
}

export function signCheckpoint(key: AuditKey, body: CheckpointBody): string {
  const text = checkpointText(body);
  const signature = sign(null, Buffer.from(text, 'utf8'), key.privateKey);
  return `${text}\n\u2014 ${key.name} ${Buffer.concat([key.keyId, signature]).toString('base64')}\n`;
}

const MAX_NOTE_CHARS = 16_384;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Opens a note signed by the audit key and reads its checkpoint. Refuses (NoteRefused, a message
 * for the client) a note that is not a signed note, one without a verifying signature of this
 * key, one with a signature of this key that fails, and a text that is not a checkpoint.
 */
export function openCheckpoint(key: AuditKey, note: string): CheckpointBody {
  if (note.length > MAX_NOTE_CHARS) throw new NoteRefused('is longer than a checkpoint can be');
  // Control characters other than the newline are never part of a note.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f\u007f]/.test(note)) throw new NoteRefused('must be the note text exactly: lines end in \\n and it holds no other control characters');
  if (!note.endsWith('\n')) throw new NoteRefused('must end with a newline (the last signature line)');
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new NoteRefused('is not a signed note (no blank line before the signatures)');
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  let verified = false;
  for (const line of lines) {
    const m = /^\u2014 (\S+) (\S+)$/.exec(line);
    if (!m) throw new NoteRefused('has a signature line that is not "— <key name> <base64>"');
    if (m[1] !== key.name || !BASE64.test(m[2]!)) continue;
    const blob = Buffer.from(m[2]!, 'base64');
    if (blob.length < 5 || !blob.subarray(0, 4).equals(key.keyId)) continue;
    // A signature of this key that does not verify refuses the whole note.
    if (!verify(null, Buffer.from(text, 'utf8'), key.publicKeyObject, blob.subarray(4))) throw new NoteRefused('does not verify with the audit key');
    verified = true;
  }
  if (!verified) throw new NoteRefused('is not signed by this service\'s audit key');
  return parseCheckpointText(text);
}

function parseCheckpointText(text: string): CheckpointBody {
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3 || lines.some((l) => l === '')) throw new NoteRefused('is not a checkpoint (origin, count and head lines)');
  const [origin, count, head] = lines as [string, string, string];
  if (!/^(0|[1-9][0-9]{0,18})$/.test(count)) throw new NoteRefused('has a count that is not a decimal number');
  const hash = BASE64.test(head) ? Buffer.from(head, 'base64') : Buffer.alloc(0);
  if (hash.length !== 32) throw new NoteRefused('has a head that is not a base64 SHA-256 hash');
  return { origin, count: BigInt(count), headHex: hash.toString('hex') };
}

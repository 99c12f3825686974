import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

/**
 * A verifier of signed notes and checkpoints written for the tests from the C2SP texts alone
 * (c2sp.org/signed-note, c2sp.org/tlog-checkpoint), sharing no code with the service's signer
 * (src/audit/checkpoint-note.ts): what a customer holding a checkpoint would write. It is checked
 * against the reference vector of Go's golang.org/x/mod/sumdb/note (the PeterNeumann key and note)
 * in test/audit/checkpoints.test.ts, so both sides are held to someone else's bytes.
 */
export interface VerifierKey {
  name: string;
  keyId: Buffer;
  key: KeyObject;
}

export class NoteError extends Error {}

/**
 * `<name>+<8 hex digits: key id>+<base64: type byte ‖ public key>`. Names hold no '+', so the
 * first two '+' split the fields; the base64 may itself contain '+'.
 */
export function parseVerifierKey(vkey: string): VerifierKey {
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first <= 0 || second < 0) throw new NoteError('not name+hash+key');
  const name = vkey.slice(0, first);
  const hashHex = vkey.slice(first + 1, second);
  const encoded = Buffer.from(vkey.slice(second + 1), 'base64');
  if (!/^[0-9a-f]{8}$/.test(hashHex)) throw new NoteError('key hash is not 8 hex digits');
  if (encoded.length !== 33 || encoded[0] !== 0x01) throw new NoteError('not an Ed25519 (0x01) key');
  const raw = encoded.subarray(1);
  // key ID = SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 public key)[:4]
  const keyId = createHash('sha256').update(Buffer.concat([Buffer.from(name, 'utf8'), Buffer.from([0x0a, 0x01]), raw])).digest().subarray(0, 4);
  if (keyId.toString('hex') !== hashHex) throw new NoteError('key hash does not match the key');
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  return { name, keyId, key };
}

/**
 * Opens a signed note: text ending in a newline, a blank line, then signature lines
 * "— <name> <base64(key id ‖ signature)>\n". Signatures of unknown keys are ignored; one of the
 * known key that fails rejects the note; without a verified one the note is rejected. Returns the
 * note text (with its final newline).
 */
export function openNote(note: string, known: VerifierKey): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) throw new NoteError('control characters');
  if (!note.endsWith('\n')) throw new NoteError('does not end in a newline');
  const separator = note.lastIndexOf('\n\n');
  if (separator < 0) throw new NoteError('no blank line');
  const text = note.slice(0, separator + 1);
  const signatureLines = note.slice(separator + 2).split('\n').slice(0, -1);
  if (signatureLines.length === 0) throw new NoteError('no signatures');
  let verified = false;
  for (const line of signatureLines) {
    if (!line.startsWith('\u2014 ')) throw new NoteError('malformed signature line');
    const [name, b64, ...rest] = line.slice(2).split(' ');
    if (!name || !b64 || rest.length) throw new NoteError('malformed signature line');
    const blob = Buffer.from(b64, 'base64');
    if (blob.length < 4) throw new NoteError('short signature');
    if (name !== known.name || !blob.subarray(0, 4).equals(known.keyId)) continue;
    if (!verify(null, Buffer.from(text, 'utf8'), known.key, blob.subarray(4))) throw new NoteError('signature does not verify');
    verified = true;
  }
  if (!verified) throw new NoteError('no signature of the known key');
  return text;
}

export interface Checkpoint {
  origin: string;
  size: bigint;
  rootHash: Buffer;
  extensions: string[];
}

/** Origin, tree size (decimal, no leading zeros), root hash (base64), then optional extension lines. */
export function parseCheckpoint(text: string): Checkpoint {
  const lines = text.split('\n');
  if (lines.pop() !== '') throw new NoteError('text does not end in a newline');
  if (lines.length < 3 || lines.some((l) => l.length === 0)) throw new NoteError('fewer than three non-empty lines');
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...string[]];
  if (!/^(0|[1-9][0-9]*)$/.test(size)) throw new NoteError('tree size is not decimal');
  return { origin, size: BigInt(size), rootHash: Buffer.from(root, 'base64'), extensions };
}

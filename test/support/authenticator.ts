import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { encode as encodeCbor } from 'cbor';

/**
 * A software WebAuthn authenticator that signs exactly as a hardware one does (WebAuthn Level 2
 * §6.1 authenticator data, §6.5.4 attestation "none", §6.3.3 assertion signatures over
 * authenticatorData ‖ SHA-256(clientDataJSON), ES256 with a DER signature, a COSE EC2 key) and
 * plays the browser's part (clientDataJSON with type, challenge and origin). Its CBOR comes from
 * node-cbor, not from the server library's decoder. Its signature counter is the test's to set, so a
 * clone (a copy whose counter falls behind) can be played. test/mfa/authenticator.test.ts checks
 * its output with @simplewebauthn/server's own verify functions.
 */
export interface SoftCredential {
  id: Buffer;
  privateKey: KeyObject;
  x: Buffer;
  y: Buffer;
  counter: number;
}

// CBOR maps and byte strings as authenticators write them, through node-cbor (not the server's decoder).
const encode = (value: unknown): Buffer => encodeCbor(value);
const b64url = (b: Buffer) => b.toString('base64url');
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest();

/** A PublicKeyCredential as the browser's toJSON() gives it. */
function publicKeyCredential<R>(credential: SoftCredential, response: R) {
  return { id: b64url(credential.id), rawId: b64url(credential.id), type: 'public-key' as const, clientExtensionResults: {}, response };
}

export class SoftAuthenticator {
  readonly credentials: SoftCredential[] = [];
  constructor(readonly origin: string, readonly rpId: string = new URL(origin).hostname) {}

  private authData(flags: number, counter: number, attested?: Buffer): Buffer {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(counter);
    return Buffer.concat([sha256(this.rpId), Buffer.from([flags]), count, ...(attested ? [attested] : [])]);
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string, origin = this.origin): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }), 'utf8');
  }

  /** navigator.credentials.create() for the server's creation options. */
  create(options: { challenge: string; rp?: { id?: string } }, extra: { origin?: string } = {}) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const credential: SoftCredential = { id: randomBytes(32), privateKey, x: Buffer.from(jwk.x!, 'base64url'), y: Buffer.from(jwk.y!, 'base64url'), counter: 0 };
    this.credentials.push(credential);
    const cose = encode(new Map<number, unknown>([[1, 2], [3, -7], [-1, 1], [-2, credential.x], [-3, credential.y]]));
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(credential.id.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLength, credential.id, Buffer.from(cose)]);
    const authData = this.authData(0x45, credential.counter, attested); // UP | UV | AT
    const attestationObject = encode(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]]));
    return publicKeyCredential(credential, {
      clientDataJSON: b64url(this.clientData('webauthn.create', options.challenge, extra.origin)),
      attestationObject: b64url(Buffer.from(attestationObject)),
      transports: ['internal'],
    });
  }

  /** navigator.credentials.get() with one of this authenticator's credentials (the first by default). */
  get(options: { challenge: string }, extra: { credential?: SoftCredential; counter?: number; origin?: string } = {}) {
    const credential = extra.credential ?? this.credentials[0];
    if (!credential) throw new Error('the authenticator holds no credential');
    credential.counter = extra.counter ?? credential.counter + 1;
    const authenticatorData = this.authData(0x05, credential.counter); // UP | UV
    const clientDataJSON = this.clientData('webauthn.get', options.challenge, extra.origin);
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientDataJSON)]), credential.privateKey);
    return publicKeyCredential(credential, {
      clientDataJSON: b64url(clientDataJSON),
      authenticatorData: b64url(authenticatorData),
      signature: b64url(signature),
    });
  }

  /** A copy of a credential (a cloned authenticator): same key, its own counter. */
  clone(credential: SoftCredential = this.credentials[0]!): SoftCredential {
    return { ...credential };
  }
}

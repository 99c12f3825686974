import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { lazy } from '../lib/lazy';

// Loaded on first use (src/lib/lazy.ts): only processes that serve passkeys hold it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const webauthn = lazy(() => require('@simplewebauthn/server') as typeof import('@simplewebauthn/server'));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const helpers = lazy(() => require('@simplewebauthn/server/helpers') as typeof import('@simplewebauthn/server/helpers'));

/**
 * Passkeys (WebAuthn Level 2) through @simplewebauthn/server, a maintained relying-party library:
 * it parses the CBOR attestation, checks the challenge, origin, relying party id, flags and the
 * ES256/RS256/EdDSA signature, and refuses a signature counter that did not grow (a cloned
 * authenticator). We keep only what it hands back: credential id, public key, counter.
 */
export interface RelyingParty {
  id: string;
  name: string;
  origins: string[];
}

export interface StoredPasskey {
  credentialId: string;
  publicKey: string;
  counter: number;
  transports: string[];
}

const TIMEOUT_MS = 5 * 60_000;

/** The library's options as plain JSON objects (its interfaces carry no index signature). */
function plain<T extends { extensions?: object }>(options: T): Omit<T, 'extensions'> & { extensions?: Record<string, unknown> } {
  const { extensions, ...rest } = options;
  return extensions ? { ...rest, extensions: Object.fromEntries(Object.entries(extensions)) } : rest;
}

export async function registrationOptions(
  rp: RelyingParty,
  user: { id: string; email: string; name: string | null },
  existing: StoredPasskey[],
) {
  const options: PublicKeyCredentialCreationOptionsJSON = await webauthn().generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.name ?? user.email,
    userID: new TextEncoder().encode(user.id),
    timeout: TIMEOUT_MS,
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
  });
  return plain(options);
}

/** The new credential, or null when the response does not prove the challenge. */
export async function verifyRegistration(rp: RelyingParty, response: RegistrationResponseJSON, challenge: string): Promise<StoredPasskey | null> {
  const result = await webauthn().verifyRegistrationResponse({
    response,
    expectedChallenge: challenge,
    expectedOrigin: rp.origins,
    expectedRPID: rp.id,
    requireUserVerification: false,
  }).catch(() => null);
  if (!result?.verified) return null;
  const { credential } = result.registrationInfo;
  return {
    credentialId: credential.id,
    publicKey: helpers().isoBase64URL.fromBuffer(credential.publicKey),
    counter: credential.counter,
    transports: credential.transports ?? [],
  };
}

export async function authenticationOptions(rp: RelyingParty, passkeys: StoredPasskey[]) {
  const options: PublicKeyCredentialRequestOptionsJSON = await webauthn().generateAuthenticationOptions({
    rpID: rp.id,
    timeout: TIMEOUT_MS,
    userVerification: 'preferred',
    allowCredentials: passkeys.map((p) => ({ id: p.credentialId, transports: p.transports })),
  });
  return plain(options);
}

/** The credential's new counter, or null when the assertion fails (a lower counter included). */
export async function verifyAuthentication(
  rp: RelyingParty,
  response: AuthenticationResponseJSON,
  challenge: string,
  passkey: StoredPasskey,
): Promise<number | null> {
  const result = await webauthn().verifyAuthenticationResponse({
    response,
    expectedChallenge: challenge,
    expectedOrigin: rp.origins,
    expectedRPID: rp.id,
    requireUserVerification: false,
    credential: {
      id: passkey.credentialId,
      publicKey: helpers().isoBase64URL.toBuffer(passkey.publicKey),
      counter: passkey.counter,
      transports: passkey.transports as never,
    },
  }).catch(() => null);
  return result?.verified ? result.authenticationInfo.newCounter : null;
}

/** The credential id an assertion names, for finding its stored passkey. */
export function assertionCredentialId(response: AuthenticationResponseJSON): string {
  return response.id;
}

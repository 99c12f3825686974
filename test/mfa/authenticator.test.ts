import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { SoftAuthenticator } from '../support/authenticator';

/**
 * The software authenticator the passkey tests use is faithful: @simplewebauthn/server's own
 * verify functions (not our wrappers) accept what it signs, and refuse what a real relying party
 * must refuse (another origin, another challenge, a counter that went back).
 */
const origin = 'http://localhost:3999';
const rpID = 'localhost';

async function registered() {
  const authenticator = new SoftAuthenticator(origin);
  const options = await generateRegistrationOptions({ rpName: 'Test', rpID, userName: 'a@example.com', attestationType: 'none' });
  const response = authenticator.create(options);
  const result = await verifyRegistrationResponse({ response, expectedChallenge: options.challenge, expectedOrigin: origin, expectedRPID: rpID });
  return { authenticator, result };
}

describe('software authenticator', () => {
  it('registers with attestation none and ES256, as the server library verifies it', async () => {
    const { result } = await registered();
    expect(result.verified).toBe(true);
    expect(result.registrationInfo?.fmt).toBe('none');
    expect(result.registrationInfo?.credential.counter).toBe(0);
  });

  it('signs assertions the server library accepts, with a growing counter', async () => {
    const { authenticator, result } = await registered();
    const credential = result.registrationInfo!.credential;
    for (const expected of [1, 2]) {
      const options = await generateAuthenticationOptions({ rpID });
      const verified = await verifyAuthenticationResponse({
        response: authenticator.get(options),
        expectedChallenge: options.challenge,
        expectedOrigin: origin,
        expectedRPID: rpID,
        credential: { ...credential, counter: expected - 1 },
      });
      expect(verified).toMatchObject({ verified: true, authenticationInfo: { newCounter: expected } });
    }
  });

  it('is refused for another origin, another challenge and a counter that went back', async () => {
    const { authenticator, result } = await registered();
    const credential = { ...result.registrationInfo!.credential, counter: 5 };
    const options = await generateAuthenticationOptions({ rpID });
    const check = (response: ReturnType<SoftAuthenticator['get']>, challenge = options.challenge) =>
      verifyAuthenticationResponse({ response, expectedChallenge: challenge, expectedOrigin: origin, expectedRPID: rpID, credential });
    await expect(check(authenticator.get(options, { counter: 6, origin: 'https://evil.example' }))).rejects.toThrow(/origin/i);
    await expect(check(authenticator.get(options, { counter: 7 }), 'another-challenge')).rejects.toThrow(/challenge/i);
    await expect(check(authenticator.get(options, { counter: 3 }))).rejects.toThrow(/counter/i);
    await expect(check(authenticator.get(options, { counter: 8 }))).resolves.toMatchObject({ verified: true });
  });
});

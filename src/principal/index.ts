/** Credentials → principals (see schemes.ts). */
export { CREDENTIAL_RESOLVERS, credentialReader, type SchemeDefinition } from './schemes';
export type { SessionLoader, LoaderRequest } from '../domain/principal';
export { principalFromSession, principalFromSessionWith, type SessionPreload } from './session';
export { principalFromApiKey } from './api-key';
export { principalFromWorkerToken, workerClaimFromToken } from './worker-token';
export { principalFromScimToken } from './scim-token';

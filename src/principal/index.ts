/** Credentials → principals (see schemes.ts). */
export { CREDENTIAL_RESOLVERS, credentialReader, type SchemeDefinition, type SessionLoader, type LoaderRequest } from './schemes';
export { principalFromSession, principalFromSessionWith, type SessionPreload } from './session';
export { principalFromApiKey } from './api-key';
export { principalFromWorkerToken, workerClaimFromToken } from './worker-token';
export { principalFromScimToken } from './scim-token';

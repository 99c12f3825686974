/** Where oidc-provider sends a browser to sign in or consent (./interactions.ts answers there). */
export const INTERACTION_PATH = '/oauth/interaction';

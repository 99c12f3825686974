import type * as OidcProvider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { AppDeps } from '../domain/deps';
import { sortedPermissions } from '../access/role-permissions';
import { delegationForExchange } from '../authorizations/delegations';
import type { ClientKind } from './clients';
import { readSubjectToken } from './subject-tokens';

export { TOKEN_EXCHANGE } from './clients';
/** The one token type this service exchanges (RFC 8693 §3). */
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** The request's parameters the library passes to the grant (it drops any other). */
export const TOKEN_EXCHANGE_PARAMS = ['subject_token', 'subject_token_type', 'actor_token', 'actor_token_type', 'requested_token_type', 'scope', 'resource'];

/** What the JWT customizer writes into an exchanged token (./provider.ts), by the library's token object. */
interface Exchanged {
  memberId: string;
  organizationId: string;
  authorizationId: string;
  actor: string;
}
const exchangedTokens = new WeakMap<object, Exchanged>();
export const exchangedOf = (token: object): Exchanged | undefined => exchangedTokens.get(token);

type Errors = typeof OidcProvider.errors;
type ResourceServerData = ConstructorParameters<OidcProvider.default['ResourceServer']>[1];

/**
 * The token-exchange grant (RFC 8693; docs/workers-and-usage.md#delegations-and-token-exchange),
 * registered on oidc-provider with `registerGrantType`: the library authenticates the client
 * (a worker, with its host token as secret) and checks that the client may use the grant; this
 * handler applies the product's rules and has the library issue and sign the token, a
 * ClientCredentials token whose claims the JWT customizer completes (`sub` the member, `act` the
 * worker, `org_id`, `authorization_id` the delegation). Every refusal of the subject token is
 * `invalid_grant`, with the reason in `error_description`.
 */
export function tokenExchangeGrant(deps: AppDeps, errors: Errors, resourceServer: (identifier: string) => ResourceServerData, defaultResource: string, accessTokenTtl: number) {
  const refuse = (reason: string) => new errors.CustomOIDCProviderError('invalid_grant', reason);
  return async (ctx: KoaContextWithOIDC): Promise<void> => {
    const client = ctx.oidc.client!;
    const metadata = client.metadata() as { client_kind?: ClientKind; organization_id?: string; scope?: string };
    if (metadata.client_kind !== 'worker' || !metadata.organization_id) throw new errors.UnauthorizedClient('only workers exchange tokens');
    const params = ctx.oidc.params as Record<string, unknown>;
    const subjectToken = params.subject_token;
    if (typeof subjectToken !== 'string' || subjectToken.length === 0) throw new errors.InvalidRequest('missing required parameter subject_token');
    if (params.subject_token_type !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
    if (params.actor_token !== undefined || params.actor_token_type !== undefined) throw new errors.InvalidRequest('actor_token is not accepted: the actor is the authenticated client');
    if (params.requested_token_type !== undefined && params.requested_token_type !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
    const resource = params.resource === undefined ? defaultResource : params.resource;
    if (typeof resource !== 'string') throw new errors.InvalidTarget('only a single resource indicator value is supported for this grant type');
    const server = resourceServer(resource);

    const subject = subjectToken.length <= 8192 ? readSubjectToken(subjectToken) : null;
    if (!subject) throw refuse('the subject token is not a token of this service');
    if (subject.act) throw refuse('an exchanged token cannot be exchanged again');
    if (subject.mayAct === null) throw refuse('the subject token names no allowed actor (may_act): only a delegation to a worker does');
    const now = Math.floor(deps.clock.now().getTime() / 1000);
    if (subject.exp <= now) throw refuse('the subject token has expired');
    // Found by its hash: the token is the one the delegation answered (so its claims are ours), whatever key signed it.
    const delegation = await delegationForExchange(deps, { id: subject.authorizationId, subjectToken });
    if (!delegation) throw refuse('the subject token is revoked, expired, or its member is no longer active');
    if (delegation.organization_id !== metadata.organization_id) throw refuse("the subject token is of another organization than the client's");
    if (subject.mayAct !== client.clientId || delegation.client_id !== client.clientId) throw refuse('the subject token does not name this client as an allowed actor (may_act)');

    // Never wider than the subject token; then narrowed by the client's scopes (its ceiling ∩ its creator's permissions now).
    const requested = typeof params.scope === 'string' ? params.scope.split(' ').filter(Boolean) : null;
    const wider = requested?.filter((key) => !delegation.scopes.includes(key)) ?? [];
    if (wider.length > 0) throw new errors.InvalidScope('requested scope is wider than the subject token', wider.join(' '));
    const ceiling = new Set((metadata.scope ?? '').split(' '));
    const scope = sortedPermissions((requested ?? delegation.scopes).filter((key) => ceiling.has(key))).join(' ');
    const remaining = Math.min(subject.exp, Math.floor(delegation.expires_at.getTime() / 1000)) - now;

    const provider = ctx.oidc.provider;
    const token = new provider.ClientCredentials({ client, scope: scope || undefined, expiresIn: Math.min(accessTokenTtl, remaining) } as ConstructorParameters<typeof provider.ClientCredentials>[0]);
    token.resourceServer = new provider.ResourceServer(resource, server);
    exchangedTokens.set(token, { memberId: delegation.member_id, organizationId: delegation.organization_id, authorizationId: delegation.id, actor: client.clientId });
    ctx.oidc.entity('ClientCredentials', token);
    const value = await token.save();
    ctx.body = { access_token: value, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: token.expiration, ...(token.scope ? { scope: token.scope } : {}) };
  };
}

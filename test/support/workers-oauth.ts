import * as oauth from 'openid-client';
import { bearer } from './factories';
import { discover, type OAuthTestApp } from './oauth';
import type { TestApp } from './app';

/**
 * Workers as OAuth clients in tests (docs/workers-and-usage.md#workers-as-oauth-clients): a worker
 * with a ceiling made through the API, its openid-client configuration (client secret: its host
 * token), delegations, and RFC 8693 token exchange through openid-client's generic grant.
 */
export interface TestWorker {
  id: string;
  hostToken: string;
}

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

export async function workerWithCeiling(t: OAuthTestApp, creatorToken: string, scopes: string[], name = 'agent'): Promise<TestWorker> {
  const created = await t.http.post('/v1/workers').set(...bearer(creatorToken)).send({ name });
  if (created.status !== 201) throw new Error(`create worker: ${created.status} ${JSON.stringify(created.body)}`);
  const put = await t.http.put(`/v1/workers/${created.body.item.id}/ceiling`).set(...bearer(creatorToken)).send({ scopes });
  if (put.status !== 200) throw new Error(`set ceiling: ${put.status} ${JSON.stringify(put.body)}`);
  return { id: created.body.item.id, hostToken: created.body.hostToken };
}

export async function delegate(t: OAuthTestApp, memberToken: string, workerId: string, scopes: string[], expiresIn?: number): Promise<{ id: string; subjectToken: string }> {
  const res = await t.http
    .post(`/v1/workers/${workerId}/delegations`)
    .set(...bearer(memberToken))
    .send({ scopes, ...(expiresIn ? { expiresIn } : {}) });
  if (res.status !== 201) throw new Error(`delegate: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.item.id, subjectToken: res.body.subjectToken };
}

/** RFC 8693 token exchange by the worker, authenticated with its host token. */
export async function exchange(t: OAuthTestApp, worker: TestWorker, subjectToken: string, extra: Record<string, string> = {}) {
  const config = await discover(t, worker.id, worker.hostToken);
  return oauth.genericGrantRequest(config, TOKEN_EXCHANGE, { subject_token: subjectToken, subject_token_type: ACCESS_TOKEN_TYPE, ...extra });
}

/** The OAuth error of a refused exchange: `{error, error_description}` as openid-client reports them. */
export async function exchangeRefusal(t: OAuthTestApp, worker: TestWorker, subjectToken: string, extra: Record<string, string> = {}) {
  try {
    await exchange(t, worker, subjectToken, extra);
  } catch (err) {
    const e = err as { error?: string; error_description?: string };
    return { error: e.error, error_description: e.error_description };
  }
  throw new Error('the exchange was not refused');
}

/**
 * For the generated walks (no real port, no openid-client): a shared API-key connection and a
 * token a new worker exchanged, at the token endpoint through supertest, for the member of
 * `memberToken` (docs/workers-and-usage.md#the-credential-broker).
 */
export async function brokerLoan(t: TestApp, memberToken: string): Promise<{ connectionId: string; token: string }> {
  const suffix = Math.random().toString(36).slice(2, 8);
  const worker = await t.http.post('/v1/workers').set(...bearer(memberToken)).send({ name: `broker ${suffix}` });
  if (worker.status !== 201) throw new Error(`create worker: ${worker.status} ${JSON.stringify(worker.body)}`);
  const workerId: string = worker.body.item.id;
  await t.http.put(`/v1/workers/${workerId}/ceiling`).set(...bearer(memberToken)).send({ scopes: ['mcpConnections.use'] });
  const connection = await t.http
    .post('/v1/mcp-connections')
    .set(...bearer(memberToken))
    .send({ name: `Shared MCP ${suffix}`, url: 'https://mcp.example.test/shared', authType: 'apikey', credentialMode: 'shared', apiKey: 'broker-shared-key', access: { orgWide: true } });
  if (connection.status !== 201) throw new Error(`create connection: ${connection.status} ${JSON.stringify(connection.body)}`);
  const delegation = await t.http.post(`/v1/workers/${workerId}/delegations`).set(...bearer(memberToken)).send({ scopes: ['mcpConnections.use'] });
  const exchanged = await t.http
    .post('/oauth/token')
    .auth(workerId, worker.body.hostToken)
    .type('form')
    .send({ grant_type: TOKEN_EXCHANGE, subject_token: delegation.body.subjectToken, subject_token_type: ACCESS_TOKEN_TYPE });
  if (exchanged.status !== 200) throw new Error(`token exchange: ${exchanged.status} ${exchanged.text}`);
  return { connectionId: connection.body.item.id, token: exchanged.body.access_token };
}

import type { HandlerMap } from '../contract';
import { membershipOf, principalOf, workerOf } from '../access/roles';
import { LLM_PROVIDER } from '../grants/resources';
import * as grants from '../grants/service';
import * as providers from './service';
import { testProvider } from './test-call';
import { delegatedLlmConfig, workerLlmConfig } from './worker-config';

type Ops =
  | 'listLlmProviders'
  | 'createLlmProvider'
  | 'getLlmProvider'
  | 'updateLlmProvider'
  | 'deleteLlmProvider'
  | 'setLlmProviderKey'
  | 'testLlmProvider'
  | 'grantLlmProviderAccess'
  | 'listLlmProviderAccess'
  | 'revokeLlmProviderAccess'
  | 'getWorkerLlmConfig';

const guard = providers.providerGuard;

export const llmProviderHandlers: HandlerMap<Ops> = {
  listLlmProviders: async (ctx) => ({ status: 200, body: await providers.listProviders(ctx.deps, membershipOf(ctx), ctx.query) }),
  createLlmProvider: async (ctx) => ({ status: 201, body: { ok: true, item: await providers.createProvider(ctx.deps, membershipOf(ctx), ctx.body) } }),
  getLlmProvider: async (ctx) => ({ status: 200, body: { ok: true, item: await providers.getProvider(ctx.deps, membershipOf(ctx), ctx.params.providerId) } }),
  updateLlmProvider: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await providers.updateProvider(ctx.deps, membershipOf(ctx), ctx.params.providerId, ctx.body) },
  }),
  deleteLlmProvider: async (ctx) => {
    await providers.deleteProvider(ctx.deps, membershipOf(ctx), ctx.params.providerId);
    return { status: 204, body: undefined };
  },
  setLlmProviderKey: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await providers.setProviderKey(ctx.deps, membershipOf(ctx), ctx.params.providerId, ctx.body.apiKey) },
  }),
  testLlmProvider: async (ctx) => ({ status: 200, body: await testProvider(ctx.deps, membershipOf(ctx), ctx.params.providerId) }),
  grantLlmProviderAccess: async (ctx) => {
    const { created, item } = await grants.grantAccess(ctx.deps, LLM_PROVIDER, guard, membershipOf(ctx), ctx.params.providerId, ctx.body);
    return created ? { status: 201, body: { ok: true, item } } : { status: 200, body: { ok: true, item } };
  },
  listLlmProviderAccess: async (ctx) => ({
    status: 200,
    body: await grants.listAccess(ctx.deps, LLM_PROVIDER, guard, membershipOf(ctx), ctx.params.providerId, ctx.query),
  }),
  revokeLlmProviderAccess: async (ctx) => ({
    status: 200,
    body: { ok: true, item: await grants.revokeAccess(ctx.deps, LLM_PROVIDER, guard, membershipOf(ctx), ctx.params.providerId, ctx.params.grantId) },
  }),
  // x-worker-token: the creator's providers; a delegated access token: the member's (src/llm-providers/worker-config.ts).
  getWorkerLlmConfig: async (ctx) => ({
    status: 200,
    body: ctx.principal?.kind === 'accessToken' ? await delegatedLlmConfig(ctx.deps, principalOf(ctx), ctx.params.id) : await workerLlmConfig(ctx.deps, workerOf(ctx), ctx.params.id),
  }),
};

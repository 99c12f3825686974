import type { HandlerMap } from '../contract';
import { membershipOf, principalOf } from '../access/roles';
import { scimCallerOf } from './common';
import * as tokens from './tokens';
import * as users from './users';
import * as groups from './groups';
import * as discovery from './discovery';
import { listDirectoryUsers } from './directory-users';
import type { PatchOperation } from './patch';

type TokenOperations = 'createScimToken' | 'listScimTokens' | 'revokeScimToken' | 'listDirectoryUsers';
type ProtocolOperations =
  | 'scimGetServiceProviderConfig'
  | 'scimListResourceTypes'
  | 'scimGetResourceType'
  | 'scimListSchemas'
  | 'scimGetSchema'
  | 'scimListUsers'
  | 'scimCreateUser'
  | 'scimGetUser'
  | 'scimReplaceUser'
  | 'scimPatchUser'
  | 'scimDeleteUser'
  | 'scimListGroups'
  | 'scimCreateGroup'
  | 'scimGetGroup'
  | 'scimReplaceGroup'
  | 'scimPatchGroup'
  | 'scimDeleteGroup';

// SCIM bodies are open JSON objects (the spec types them loosely); the services read them.
type Body = Record<string, unknown>;
const operationsOf = (body: { Operations: unknown[] }) => body.Operations as PatchOperation[];

export const scimTokenHandlers: HandlerMap<TokenOperations> = {
  createScimToken: async (ctx) => {
    const { item, token } = await tokens.createToken(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.body);
    return { status: 201, body: { ok: true, item, token } };
  },
  listScimTokens: async (ctx) => ({ status: 200, body: await tokens.listTokens(ctx.deps, membershipOf(ctx), ctx.query) }),
  revokeScimToken: async (ctx) => {
    await tokens.revokeToken(ctx.deps, principalOf(ctx), membershipOf(ctx), ctx.params.tokenId);
    return { status: 204, body: undefined };
  },
  listDirectoryUsers: async (ctx) => ({ status: 200, body: await listDirectoryUsers(ctx.deps, membershipOf(ctx), ctx.query) }),
};

export const scimProtocolHandlers: HandlerMap<ProtocolOperations> = {
  scimGetServiceProviderConfig: async (ctx) => {
    const caller = await scimCallerOf(ctx);
    return { status: 200, body: discovery.serviceProviderConfig(caller.baseUrl, ctx.deps.settings.scimMaxResults) as never };
  },
  scimListResourceTypes: async (ctx) => ({ status: 200, body: discovery.resourceTypes((await scimCallerOf(ctx)).baseUrl) as never }),
  scimGetResourceType: async (ctx) => ({ status: 200, body: discovery.resourceType((await scimCallerOf(ctx)).baseUrl, ctx.params.name) as never }),
  scimListSchemas: async (ctx) => ({ status: 200, body: discovery.schemas((await scimCallerOf(ctx)).baseUrl) as never }),
  scimGetSchema: async (ctx) => ({ status: 200, body: discovery.schema((await scimCallerOf(ctx)).baseUrl, ctx.params.schemaId) as never }),

  scimListUsers: async (ctx) => ({ status: 200, body: (await users.listUsers(ctx.deps, await scimCallerOf(ctx), ctx.query)) as never }),
  scimCreateUser: async (ctx) => ({ status: 201, body: (await users.createUser(ctx.deps, await scimCallerOf(ctx), ctx.body as Body)) as never }),
  scimGetUser: async (ctx) => ({ status: 200, body: (await users.getUser(ctx.deps, await scimCallerOf(ctx), ctx.params.userId, ctx.query)) as never }),
  scimReplaceUser: async (ctx) => ({ status: 200, body: (await users.replaceUser(ctx.deps, await scimCallerOf(ctx), ctx.params.userId, ctx.body as Body)) as never }),
  scimPatchUser: async (ctx) => ({ status: 200, body: (await users.patchUser(ctx.deps, await scimCallerOf(ctx), ctx.params.userId, operationsOf(ctx.body))) as never }),
  scimDeleteUser: async (ctx) => {
    await users.deleteUser(ctx.deps, await scimCallerOf(ctx), ctx.params.userId);
    return { status: 204, body: undefined };
  },

  scimListGroups: async (ctx) => ({ status: 200, body: (await groups.listGroups(ctx.deps, await scimCallerOf(ctx), ctx.query)) as never }),
  scimCreateGroup: async (ctx) => ({ status: 201, body: (await groups.createGroup(ctx.deps, await scimCallerOf(ctx), ctx.body as Body)) as never }),
  scimGetGroup: async (ctx) => ({ status: 200, body: (await groups.getGroup(ctx.deps, await scimCallerOf(ctx), ctx.params.groupId, ctx.query)) as never }),
  scimReplaceGroup: async (ctx) => ({ status: 200, body: (await groups.replaceGroup(ctx.deps, await scimCallerOf(ctx), ctx.params.groupId, ctx.body as Body)) as never }),
  scimPatchGroup: async (ctx) => ({ status: 200, body: (await groups.patchGroup(ctx.deps, await scimCallerOf(ctx), ctx.params.groupId, operationsOf(ctx.body))) as never }),
  scimDeleteGroup: async (ctx) => {
    await groups.deleteGroup(ctx.deps, await scimCallerOf(ctx), ctx.params.groupId);
    return { status: 204, body: undefined };
  },
};

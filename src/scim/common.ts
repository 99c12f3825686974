import type { HandlerContext, OperationId } from '../contract';
import type { AppDeps } from '../domain/deps';
import { SCIM_BASE_PATH } from './base-path';
import { LIST_SCHEMA, type JsonObject } from './attributes';
import { ScimError } from './errors';
import { FeatureNotInPlan, requireFeature } from '../plans';

/** Who calls a /scim/v2 route: a SCIM token, acting for its organization. */
export interface ScimCaller {
  organizationId: string;
  tokenId: string;
  /** The member who created the token: the token cannot restore them (a suspended admin's own way back). */
  tokenCreatorMemberId: string | null;
  /** Absolute base of the SCIM endpoint, for `meta.location`. */
  baseUrl: string;
}

export interface ListQuery {
  filter?: string;
  startIndex?: number;
  count?: number;
  attributes?: string;
  excludedAttributes?: string;
}

/** The caller of a SCIM route; an organization whose plan lost the `scim` feature gets 403. */
export async function scimCallerOf<K extends OperationId>(ctx: HandlerContext<K>): Promise<ScimCaller> {
  const principal = ctx.principal;
  if (!principal || principal.kind !== 'scim') throw new ScimError(401, undefined, 'A SCIM token is required.');
  try {
    await requireFeature(ctx.deps.db, ctx.deps.settings, principal.organizationId, 'scim');
  } catch (err) {
    // Tokens outlive a plan change: the organization that lost the feature is refused, not unknown.
    if (err instanceof FeatureNotInPlan) throw new ScimError(403, undefined, "The organization's plan does not include SCIM provisioning.");
    throw err;
  }
  return {
    organizationId: principal.organizationId,
    tokenId: principal.scimTokenId,
    tokenCreatorMemberId: principal.createdByMemberId,
    baseUrl: `${ctx.deps.settings.publicBaseUrl.replace(/\/+$/, '')}${SCIM_BASE_PATH}`,
  };
}

/** RFC 7644 §3.4.2.4: startIndex below 1 is 1; count below 0 is 0 and above maxResults is maxResults. */
export function pageWindow(deps: AppDeps, query: ListQuery): { startIndex: number; count: number } {
  const max = deps.settings.scimMaxResults;
  const startIndex = Math.max(1, Math.min(Math.trunc(query.startIndex ?? 1), 2_000_000_000));
  const count = Math.max(0, Math.min(Math.trunc(query.count ?? max), max));
  return { startIndex, count };
}

export function listResponse(totalResults: number, startIndex: number, resources: JsonObject[]) {
  return { schemas: [LIST_SCHEMA], totalResults, startIndex, itemsPerPage: resources.length, Resources: resources };
}

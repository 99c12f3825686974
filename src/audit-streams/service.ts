import type { components } from '../../generated/api';
import type { AppDeps } from '../domain/deps';
import type { Membership } from '../domain/principal';
import { Invalid, NotFound } from '../lib/errors';
import { newId } from '../lib/ids';
import { positioned, type PageRequest } from '../lib/pagination';
import { requireFeature } from '../plans';
import { changed, created, headPosition, positionBefore, recordChange } from '../audit';
import { splitConfig, type StreamSecrets } from './config';
import type { StreamType } from './tables';
import * as store from './store';

type AuditStream = components['schemas']['AuditStream'];
type AuditStreamStatus = components['schemas']['AuditStreamStatus'];

const notFound = () => new NotFound('audit_stream_not_found', 'The audit stream could not be found.');

export function toStream(row: store.StreamRow): AuditStream {
  return {
    id: row.id,
    type: row.type,
    config: (typeof row.config === 'string' ? JSON.parse(row.config) : row.config) as AuditStream['config'],
    enabled: row.enabled,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** What an audit entry and event show of a stream (never a secret). */
function visible(row: store.StreamRow) {
  return { type: row.type, config: row.config, enabled: row.enabled };
}

export async function createStream(deps: AppDeps, membership: Membership, input: { type: StreamType; config: Record<string, unknown>; from?: string; enabled?: boolean }) {
  const { organizationId } = membership;
  await requireFeature(deps.db, deps.settings, organizationId, 'auditLog');
  const now = deps.clock.now();
  const from = input.from === undefined ? undefined : new Date(input.from);
  if (from && from.getTime() > now.getTime()) throw Invalid.at(['body', 'from'], 'must not be in the future');
  const split = splitConfig(deps.outbound, input.type, input.config, null);
  const id = newId('auditStream');
  const row = await deps.db.transaction().execute(async (trx) => {
    await recordChange(trx, deps.audit, {
      action: 'audit_stream.created',
      target: { type: 'audit_stream', id },
      changes: created({ type: input.type, config: split.config, enabled: input.enabled ?? true, from: input.from ?? null }),
    });
    // The creation entry is now the head (this transaction holds the head's lock): a stream
    // without `from` starts with it; one with `from` starts at the first entry at or after it.
    const cursorSeq = from ? await positionBefore(trx, organizationId, from) : (BigInt(await headPosition(trx, organizationId)) - 1n).toString();
    return store.insertStream(trx, {
      id,
      organizationId,
      type: input.type,
      config: split.config,
      secretsSealed: deps.secrets.encrypt(JSON.stringify(split.secrets)),
      enabled: input.enabled ?? true,
      cursorSeq,
      now,
    });
  });
  return { item: toStream(row), secret: split.madeSecret };
}

export async function listStreams(deps: AppDeps, membership: Membership, page: PageRequest) {
  return deps.cursors.page(
    'audit-streams',
    page,
    async (after, take) => positioned(await store.listStreams(deps.db, membership.organizationId, after, take)),
    (row) => toStream(row),
  );
}

export async function getStream(deps: AppDeps, membership: Membership, id: string) {
  const row = await store.findStream(deps.db, membership.organizationId, id);
  if (!row) throw notFound();
  return toStream(row);
}

export async function updateStream(deps: AppDeps, membership: Membership, id: string, input: { enabled?: boolean; config?: Record<string, unknown> }) {
  const now = deps.clock.now();
  const row = await deps.db.transaction().execute(async (trx) => {
    const before = await store.findStream(trx, membership.organizationId, id, true);
    if (!before) throw notFound();
    let config: Record<string, unknown> | undefined;
    let secretsSealed: string | undefined;
    if (input.config !== undefined) {
      const kept = JSON.parse(deps.secrets.decrypt(before.secrets_sealed)) as StreamSecrets;
      const split = splitConfig(deps.outbound, before.type, input.config, kept);
      config = split.config;
      secretsSealed = deps.secrets.encrypt(JSON.stringify(split.secrets));
    }
    const restart = input.config !== undefined || (input.enabled === true && !before.enabled);
    const updated = (await store.updateStream(trx, membership.organizationId, id, { enabled: input.enabled, config, secretsSealed, restart }, now))!;
    await recordChange(trx, deps.audit, { action: 'audit_stream.updated', target: { type: 'audit_stream', id }, changes: changed(visible(before), visible(updated)) });
    return updated;
  });
  return toStream(row);
}

export async function deleteStream(deps: AppDeps, membership: Membership, id: string): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    if (!(await store.deleteStream(trx, membership.organizationId, id))) throw notFound();
    await recordChange(trx, deps.audit, { action: 'audit_stream.deleted', target: { type: 'audit_stream', id }, changes: {} });
  });
}

/** Where the stream is: its cursor, the entries written since (lag), its last outcome and state. */
export async function streamStatus(deps: AppDeps, membership: Membership, id: string): Promise<AuditStreamStatus> {
  const row = await store.findStream(deps.db, membership.organizationId, id);
  if (!row) throw notFound();
  const head = BigInt(await headPosition(deps.db, membership.organizationId));
  const lag = head - BigInt(row.cursor_seq);
  return {
    cursor: row.cursor_id,
    lag: Number(lag > 0n ? lag : 0n),
    lastDeliveredAt: row.last_delivered_at?.toISOString() ?? null,
    lastError: row.last_error,
    state: row.paused_at ? 'paused' : row.failing_since ? 'failing' : 'active',
  };
}

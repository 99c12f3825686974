import { loadContract } from '../support/spec';
import { PERMISSION_CATALOGUE, PERMISSION_KEYS } from '../../src/access/permissions';
import { builtInPermissions } from '../../src/access/builtin-roles';

/**
 * The spec's `x-permission` / `x-permission-also` and the catalogue in src/access/permissions.ts
 * name the same keys: an operation naming an unknown key, or a key no operation names, fails
 * with what to add where.
 */
type Operation = { operationId: string; 'x-permission'?: unknown; 'x-permission-also'?: unknown };

function declared(): Map<string, string[]> {
  const doc = loadContract();
  const uses = new Map<string, string[]>();
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item) as Operation[]) {
      if (!op || typeof op !== 'object' || !op.operationId) continue;
      const keys = [op['x-permission'], ...((op['x-permission-also'] as unknown[] | undefined) ?? [])].filter((k) => k !== undefined);
      for (const key of keys) uses.set(String(key), [...(uses.get(String(key)) ?? []), op.operationId]);
    }
  }
  return uses;
}

it('knows every permission an operation declares', () => {
  const unknown = [...declared().entries()].filter(([key]) => !Object.hasOwn(PERMISSION_CATALOGUE, key));
  const hint = unknown.map(([key, ops]) => `${key} (declared by ${ops.join(', ')}): add it to PERMISSION_CATALOGUE in src/access/permissions.ts`);
  expect(hint).toEqual([]);
});

/**
 * Keys in the catalogue ahead of the operations they will guard (so roles and, later, OAuth
 * scopes can name them), each with those operations. A key here must be declared by no operation
 * yet: once one declares it, remove it from this list.
 */
const AWAITING_OPERATIONS: Record<string, string> = {};

it('has no permission that no operation declares', () => {
  const uses = declared();
  const unused = PERMISSION_KEYS.filter((key) => !uses.has(key) && !Object.hasOwn(AWAITING_OPERATIONS, key));
  const hint = unused.map((key) => `${key}: declare it as x-permission (or x-permission-also) on the operations it guards in openapi/paths/*.yaml, or remove it from the catalogue`);
  expect(hint).toEqual([]);
});

it('lists as awaiting only keys that are in the catalogue and that no operation declares yet', () => {
  const uses = declared();
  const stale = Object.keys(AWAITING_OPERATIONS).filter((key) => !Object.hasOwn(PERMISSION_CATALOGUE, key) || uses.has(key));
  const hint = stale.map((key) => `${key}: ${uses.has(key) ? `declared by ${uses.get(key)!.join(', ')}` : 'not in the catalogue'}; remove it from AWAITING_OPERATIONS`);
  expect(hint).toEqual([]);
});

it('gives the built-in roles nested permission sets, the owner all of them', () => {
  const [owner, admin, member] = [builtInPermissions('owner'), builtInPermissions('admin'), builtInPermissions('member')];
  expect([...owner].sort()).toEqual([...PERMISSION_KEYS].sort());
  for (const key of member) expect(admin.has(key)).toBe(true);
  for (const key of admin) expect(owner.has(key)).toBe(true);
  expect(member.has('members.read')).toBe(true);
  expect(member.has('teams.manage')).toBe(false);
});

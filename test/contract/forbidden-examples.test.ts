import { PERMISSION_CATALOGUE } from '../../src/access/permissions';
import { contractOperations, deref, loadBundle } from '../../scripts/error-contract';

/**
 * A 403's example names the permission the operation declares. The router refuses a member who
 * lacks the operation's `x-permission` with `This action needs the permission <key>.` under the
 * key's `reason` (src/access/roles.ts); a service refuses with a key of `x-permission-also`. The
 * answers the contract shares between operations (openapi/components/error-answers.yaml, written
 * by `npm run spec:errors`) once showed one key for every operation with the same codes: POST
 * /v1/teams said `org.update`. This reads every example of every operation's 403, so a key can
 * no longer drift from the operation it documents.
 */
type Json = Record<string, unknown>;

const NEEDS = /needs the permission ([\w.]+)\./;

interface Forbidden {
  reason?: string;
  message?: string;
}

/** Every problem with the permissions the 403 examples of a contract name. */
export function forbiddenExampleProblems(doc: ReturnType<typeof loadBundle>): { problems: string[]; checked: number } {
  const problems: string[] = [];
  let checked = 0;
  const catalogue = PERMISSION_CATALOGUE as Record<string, { reason: string }>;
  for (const { op, method, path } of contractOperations(doc)) {
    const at = `${method.toUpperCase()} ${path}`;
    const primary = typeof op['x-permission'] === 'string' ? op['x-permission'] : undefined;
    const declared = [...(primary ? [primary] : []), ...((op['x-permission-also'] as string[] | undefined) ?? [])];
    const forbidden = (op.responses as Json | undefined)?.['403'];
    if (!forbidden) continue;
    const media = ((deref(doc, forbidden).content ?? {}) as Record<string, Json>)['application/json'] ?? {};
    const examples = Object.entries((media.examples ?? {}) as Record<string, Json>).map(([name, e]) => [name, deref(doc, e).value as Forbidden] as const);
    if (media.example !== undefined) examples.push(['example', media.example as Forbidden]);
    // A reason the operation's own permission answers must be shown with that permission.
    if (primary) {
      const reason = catalogue[primary]!.reason;
      const shown = examples.filter(([, value]) => value.reason === reason);
      if (shown.length === 0) problems.push(`${at}: no 403 example of reason ${reason}, the reason of its x-permission ${primary}`);
      for (const [name, value] of shown) {
        checked++;
        if (NEEDS.exec(value.message ?? '')?.[1] !== primary) problems.push(`${at}: 403 example ${name} says "${value.message}"; its x-permission is ${primary}`);
      }
    }
    for (const [name, value] of examples) {
      const named = NEEDS.exec(value.message ?? '')?.[1];
      if (!named) continue;
      checked++;
      if (!declared.includes(named)) problems.push(`${at}: 403 example ${name} names ${named}, which the operation does not declare (${declared.join(', ') || 'none'})`);
      else if (catalogue[named]?.reason !== value.reason) problems.push(`${at}: 403 example ${name} names ${named} under reason ${value.reason}; ${named} is refused with ${catalogue[named]?.reason}`);
    }
  }
  return { problems, checked };
}

describe("403 examples name the operation's permission", () => {
  const doc = loadBundle();

  it('every 403 example that names a permission names one its operation declares, under that permission’s reason', () => {
    const { problems, checked } = forbiddenExampleProblems(doc);
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(100);
  });

  it('POST /v1/teams names teams.manage', () => {
    const op = contractOperations(doc).find((o) => o.operationId === 'createTeam')!;
    const media = (deref(doc, (op.op.responses as Json)['403']).content as Record<string, Json>)['application/json']!;
    const example = deref(doc, (media.examples as Record<string, Json>).org_admin_required).value as Forbidden;
    expect(example.message).toBe('This action needs the permission teams.manage.');
  });

  it('fails on a shared answer that shows another operation’s permission', () => {
    const answer = (key: string) => ({
      content: { 'application/json': { examples: { org_admin_required: { value: { error: 'forbidden', reason: 'org_admin_required', message: `This action needs the permission ${key}.` } } } } },
    });
    const doc = {
      paths: {
        '/v1/teams': { post: { operationId: 'createTeam', 'x-permission': 'teams.manage', responses: { '403': answer('org.update') } } },
        '/v1/org': { patch: { operationId: 'updateOrg', 'x-permission': 'org.update', responses: { '403': answer('org.update') } } },
      },
    };
    expect(forbiddenExampleProblems(doc as never).problems).toEqual([
      'POST /v1/teams: 403 example org_admin_required says "This action needs the permission org.update."; its x-permission is teams.manage',
      'POST /v1/teams: 403 example org_admin_required names org.update, which the operation does not declare (teams.manage)',
    ]);
  });
});

import { applyPatch, parsePath } from '../../src/scim/patch';
import { ScimError } from '../../src/scim/errors';
import type { JsonObject } from '../../src/scim/attributes';

/**
 * RFC 7644 §3.5.2 PATCH on a resource document (src/scim/patch.ts), with no database: the forms
 * Okta and Entra send (docs/scim.md) and the refusals, each as the SCIM error it becomes.
 */
const user = (): JsonObject => ({
  userName: 'ada@example.com',
  active: true,
  name: { givenName: 'Ada', familyName: 'Lovelace' },
  emails: [
    { value: 'ada@example.com', type: 'work', primary: true },
    { value: 'ada@home.example', type: 'home' },
  ],
});

function scimTypeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (err) {
    if (err instanceof ScimError) return err.scimType;
    throw err;
  }
  throw new Error('expected a SCIM error');
}

describe('applyPatch', () => {
  it('replaces a simple attribute; operation names in any case', () => {
    expect(applyPatch(user(), [{ op: 'Replace', path: 'active', value: false }]).active).toBe(false);
    expect(applyPatch(user(), [{ op: 'REPLACE', path: 'userName', value: 'ada@new.example' }]).userName).toBe('ada@new.example');
  });

  it('leaves the input document unchanged', () => {
    const before = user();
    applyPatch(before, [{ op: 'remove', path: 'name.givenName' }]);
    expect(before).toEqual(user());
  });

  it('sets a sub-attribute and keeps its siblings', () => {
    const doc = applyPatch(user(), [{ op: 'replace', path: 'name.familyName', value: 'Byron' }]);
    expect(doc.name).toEqual({ givenName: 'Ada', familyName: 'Byron' });
  });

  it('a pathless replace reads its keys as attribute paths and ignores read-only id and meta (Okta)', () => {
    const doc = applyPatch(user(), [{ op: 'replace', value: { active: false, id: 'x', 'name.givenName': 'Augusta' } }]);
    expect(doc.active).toBe(false);
    expect(doc.id).toBeUndefined();
    expect((doc.name as JsonObject).givenName).toBe('Augusta');
  });

  it('a value filter selects the element whose sub-attribute changes', () => {
    const doc = applyPatch(user(), [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'ada@work.example' }]);
    expect(doc.emails).toEqual([
      { value: 'ada@work.example', type: 'work', primary: true },
      { value: 'ada@home.example', type: 'home' },
    ]);
  });

  it('a value filter that matches nothing adds an element carrying its equalities (Entra)', () => {
    const doc = applyPatch({ userName: 'x' }, [{ op: 'add', path: 'emails[type eq "work"].value', value: 'x@work.example' }]);
    expect(doc.emails).toEqual([{ type: 'work', value: 'x@work.example' }]);
  });

  it('removes the elements a filter matches, and the attribute with its last element', () => {
    const one = applyPatch(user(), [{ op: 'remove', path: 'emails[type eq "home"]' }]);
    expect(one.emails).toEqual([{ value: 'ada@example.com', type: 'work', primary: true }]);
    const none = applyPatch(one, [{ op: 'remove', path: 'emails[type eq "work"]' }]);
    expect(none.emails).toBeUndefined();
  });

  it('add to a multi-valued attribute appends, skipping values already there', () => {
    const doc = applyPatch({ members: [{ value: 'a' }] }, [{ op: 'add', path: 'members', value: [{ value: 'a' }, { value: 'b' }] }]);
    expect(doc.members).toEqual([{ value: 'a' }, { value: 'b' }]);
  });

  it('remove with a value list drops those members only (Entra group membership)', () => {
    const doc = applyPatch({ members: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] }, [{ op: 'remove', path: 'members', value: [{ value: 'b' }] }]);
    expect(doc.members).toEqual([{ value: 'a' }, { value: 'c' }]);
  });

  it('a null value is a removal', () => {
    expect(applyPatch(user(), [{ op: 'replace', path: 'name.givenName', value: null }]).name).toEqual({ familyName: 'Lovelace' });
  });

  it('refuses what RFC 7644 refuses, each with its scimType', () => {
    expect(scimTypeOf(() => applyPatch(user(), [{ op: 'move', path: 'active', value: true }]))).toBe('invalidSyntax');
    expect(scimTypeOf(() => applyPatch(user(), [{ op: 'remove' }]))).toBe('noTarget');
    expect(scimTypeOf(() => applyPatch(user(), [{ op: 'add', value: 'not an object' }]))).toBe('invalidValue');
    expect(scimTypeOf(() => applyPatch(user(), [{ op: 'add', path: 'groups', value: [{ value: 'g' }] }]))).toBe('mutability');
    expect(scimTypeOf(() => applyPatch(user(), [{ op: 'replace', path: 'emails[type eq].value', value: 'x' }]))).toBe('invalidPath');
    expect(scimTypeOf(() => applyPatch(user(), [{ op: 'replace', path: 'userName.first', value: 'x' }]))).toBe('invalidPath');
  });
});

describe('parsePath', () => {
  it('reads attr, attr.sub, attr[filter].sub', () => {
    expect(parsePath('name.givenName')).toEqual({ attr: ['name', 'givenName'] });
    const filtered = parsePath('emails[type eq "work"].value');
    expect(filtered.attr).toEqual(['emails']);
    expect(filtered.sub).toBe('value');
    expect(filtered.filter).toMatchObject({ op: 'eq', attrPath: 'type', compValue: 'work' });
  });
});

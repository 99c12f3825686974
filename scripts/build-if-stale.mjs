// `npm start`'s build step: compiles only when a source is newer than the last build, so a start
// with nothing changed does not spend the compiler's 20-30 s of CPU. The compile itself is
// incremental (tsconfig.build.json: dist/.tsbuildinfo) when something did change.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = path.join(ROOT, 'dist', '.tsbuildinfo');
const INPUTS = ['src', 'generated', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

function newest(target) {
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs; // a deleted file changes its directory's time
  for (const entry of readdirSync(target)) latest = Math.max(latest, newest(path.join(target, entry)));
  return latest;
}

const built = existsSync(STAMP) && existsSync(path.join(ROOT, 'dist', 'src', 'main.js')) ? statSync(STAMP).mtimeMs : 0;
const changed = INPUTS.map((p) => path.join(ROOT, p)).filter(existsSync).some((p) => newest(p) > built);
if (!changed) {
  console.log('build: dist/ is up to date');
} else {
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  // tsc leaves its build info as it was when nothing it emits changed (a touched file): mark the check.
  const now = new Date();
  utimesSync(STAMP, now, now);
}

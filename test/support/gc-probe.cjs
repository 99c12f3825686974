// Preloaded into a service process started with --expose-gc (test/hardening/process.test.ts):
// reports each call of `gc` on stderr, so a test can see src/main.ts collect start-up's garbage.
const collect = globalThis.gc;
if (collect) {
  globalThis.gc = () => {
    process.stderr.write('gc-probe: full collection\n');
    collect();
  };
}

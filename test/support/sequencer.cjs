/**
 * Jest's order of test files, with the longest files first also on a machine that has no timings
 * yet (a clean CI clone). Jest orders by each file's last duration when its cache has one, and
 * otherwise by file size, which put the generated walks (short files, the longest runs) last: one
 * worker then ran a minute-long walk alone at the end. With no timings, the files below come first,
 * in this order (longest first, as measured), and the rest follow in jest's order.
 */
const Sequencer = require('@jest/test-sequencer').default;

const LONGEST_FIRST = [
  /test\/hardening\/(audit|auth|bad-input|valid-requests|isolation|protection)\.test\.ts$/,
  /test\/seams\/(dispatch|validator|router)-parity\.test\.ts$/,
  /test\/browser\//,
  /test\/hardening\/(mail-processes|webhook-processes|upstreams|process|outbound-targets|concurrency)\.test\.ts$/,
];

class LongestFirst extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.every((test) => test.duration != null)) return sorted;
    const rank = (test) => {
      const i = LONGEST_FIRST.findIndex((pattern) => pattern.test(test.path));
      return i === -1 ? LONGEST_FIRST.length : i;
    };
    return sorted
      .map((test, index) => ({ test, index }))
      .sort((a, b) => rank(a.test) - rank(b.test) || a.index - b.index)
      .map(({ test }) => test);
  }
}

module.exports = LongestFirst;

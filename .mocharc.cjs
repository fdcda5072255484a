// The unit suite's mocha settings (tsx compiles the TypeScript tests as they load).
//
// No `spec` by default: mocha adds a config's spec to the files named on the command line, so with
// one here `npx mocha test/unit/foo.test.ts` would run the whole suite. `npm run test:unit` picks a
// group through ENGINE_MONITOR_UNIT_GROUP instead:
// - `parallel`: every unit test file but the serial ones, several files at once in worker
//   processes. Each file starts its own engines, servers and PostgreSQL on free ports in its own
//   temporary folders, and counts only the processes it started (by a unique marker or its own
//   pid), so files do not see each other.
// - `serial`: the files with a test that measures time against a bound a busy machine can break,
//   run one file at a time once the parallel group is done.
const SERIAL = [
  // Launches with every hook slot hanging must take under 4 times as long as without: two timings
  // compared, which other workers' load would skew apart.
  'test/unit/hooks.test.ts',
  // /stats p99 during a 100 MB flood against its p99 when idle, and the helpers' RSS peak.
  'test/unit/output.test.ts',
  // A process ignoring SIGTERM is killed between 7 and 11 s after its start (2 s timeout + 5 s grace).
  'test/unit/launcher.test.ts',
  // Cancelled attempts' processes must be gone within 6 s, SIGKILL after a 5 s grace included
  // (on both stores; the rest of control, in control.test.ts, runs in parallel).
  'test/unit/control.cancel.test.ts',
  // Two property tests that only compute, for 7 s on a quiet machine and 16-18 s at load 15, against
  // mocha's 20 s timeout: one timed out beside the parallel workers at load 27 (and alone at load
  // 20, so it needs a longer timeout of its own as well).
  'test/unit/logQuery.test.ts',
  // Storage removed under a running engine: the test waits, by polling without a deadline of its
  // own, for states that last only until the engine's next check. It hung (90 s) once beside the
  // parallel workers at load 27 and passes alone in 4 s.
  'test/unit/cli.lock.test.ts',
  // 18 of 20 items ingested by one fleet engine must start on another within 400 ms, by the
  // database's notification (in single milliseconds when quiet, up to 95 ms at load 25; 0.5-1 s
  // without it): a bound, so not beside the parallel workers.
  'test/unit/fleetFastStart.test.ts',
];

const base = { require: ['tsx/cjs'], extension: ['ts'], timeout: 20000, reporter: 'spec' };
const group = process.env.ENGINE_MONITOR_UNIT_GROUP;

if (group === 'parallel') {
  // Three workers: the suite waits on processes, disks and sockets more than it computes (one file
  // at a time kept a core under half busy), and three still leave the second core room on a
  // 2-core machine.
  module.exports = { ...base, spec: ['test/unit/**/*.test.ts'], ignore: SERIAL, parallel: true, jobs: 3 };
} else if (group === 'serial') {
  module.exports = { ...base, spec: SERIAL };
} else if (group) {
  throw new Error(`ENGINE_MONITOR_UNIT_GROUP is "${group}": use "parallel" or "serial", or leave it unset to run the files you name`);
} else {
  module.exports = base;
}

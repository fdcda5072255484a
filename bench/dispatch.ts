// `npm run bench` scenario `dispatch`: the engine host's CPU per item with dependencies and
// priorities, against the same items without them, back to back in the same run.
import path from 'node:path';
import { CFG, TMP } from './config';
import { runChild, type LaunchResult } from './children';
import { add, fmt, log, raw } from './results';

export async function scenarioDispatch(): Promise<void> {
  log('\n== dispatch: dependencies and priorities');
  const n = CFG.dispatchItems;
  const run = (dependencies: boolean) =>
    runChild<LaunchResult>('launch', {
      root: path.join(TMP, 'dispatch'),
      items: n,
      command: '/bin/true',
      args: [],
      concurrency: CFG.concurrency,
      snapshotIntervalMs: CFG.launchSnapshotMs,
      dependencies,
    });
  // Same run, back to back: the machine's load is as alike as it gets for the two.
  const plain = await run(false);
  const deps = await run(true);
  for (const [label, r] of [['plain', plain], ['dependencies', deps]] as const) {
    if (r.launched !== n) log(`  warning (${label}): ${r.launched} of ${n} launched, ${r.failed} failed`);
  }
  raw.dispatch = { plain, dependencies: deps };
  const perItem = (r: LaunchResult) => (r.cpuMs / n) * 1000;
  add({ scenario: 'dispatch', measure: `${n} × /bin/true, no dependencies: engine host CPU per item`, value: perItem(plain), unit: 'µs' });
  add({
    scenario: 'dispatch',
    measure: `${n} × /bin/true, priorities and chains of 10 dependencies: engine host CPU per item`,
    value: perItem(deps),
    unit: 'µs',
    baseline: perItem(plain),
    ratio: perItem(deps) / perItem(plain),
    note: `wall ${fmt(deps.wallMs)} ms vs ${fmt(plain.wallMs)} ms without; loop p99 ${deps.loop.p99} ms`,
  });
  add({ scenario: 'dispatch', measure: 'scheduling overhead of dependencies and priorities per item', value: perItem(deps) - perItem(plain), unit: 'µs', note: 'engine host CPU per item, with minus without' });
}

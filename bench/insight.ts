// `npm run bench` scenario `insight`: what the attempt resource sampler costs.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { CFG, TMP } from './config';
import { runChild, type LaunchResult } from './children';
import { add, fmt, log, raw } from './results';
import { median } from './lib';
import { ResourceSampler } from '../src/core/launching/resourceSampler';

/**
 * What sampling each attempt's CPU and memory costs: the same launches with the sampler on and off
 * (ENGINE_MONITOR_SAMPLE_RESOURCES=0), in alternating order so that a drift of the machine's load
 * falls on both. `/bin/true` ends before its first sample (50 ms): its cost is the bookkeeping and the
 * read of the helper's own children's CPU at each reap, and the ≤ 5 % target is on its throughput.
 * `sleep 0.3` runs long enough for every attempt to be sampled a few times: its cost is the /proc scans.
 */
export async function scenarioInsight(): Promise<void> {
  log('\n== scenario: attempt insight (the resource sampler)');
  const cases = [
    { label: '/bin/true', command: '/bin/true', args: [] as string[], n: CFG.insightItems, concurrency: CFG.concurrency },
    { label: 'sleep 0.3', command: 'sleep', args: ['0.3'], n: CFG.insightSleepItems, concurrency: 8 },
  ];
  for (const c of cases) {
    const on: LaunchResult[] = [];
    const off: LaunchResult[] = [];
    for (let r = 0; r < CFG.insightRuns; r++) {
      for (const sampling of r % 2 === 0 ? [true, false] : [false, true]) {
        const e = await runChild<LaunchResult>('launch', {
          root: path.join(TMP, 'insight'),
          items: c.n,
          command: c.command,
          args: c.args,
          concurrency: c.concurrency,
          snapshotIntervalMs: CFG.launchSnapshotMs,
          launchHelpers: CFG.launchHelpers,
          sampleResources: sampling,
        });
        if (e.launched !== c.n) log(`  warning: ${e.launched} of ${c.n} launched, ${e.failed} failed`);
        (sampling ? on : off).push(e);
        log(`  ${c.label} run ${r + 1}, sampler ${sampling ? 'on' : 'off'}: ${e.wallMs.toFixed(0)} ms, engine cpu ${e.cpuMs.toFixed(0)} ms, helpers cpu ${e.helperCpu?.selfMs ?? '?'} ms`);
      }
    }
    raw[`insight ${c.label}`] = { on, off };
    const wallOn = median(on.map((e) => e.wallMs));
    const wallOff = median(off.map((e) => e.wallMs));
    const helperOn = median(on.map((e) => e.helperCpu?.selfMs ?? NaN));
    const helperOff = median(off.map((e) => e.helperCpu?.selfMs ?? NaN));
    const hostOn = median(on.map((e) => e.cpuMs));
    const hostOff = median(off.map((e) => e.cpuMs));
    add({
      scenario: 'insight',
      measure: `${c.n} × ${c.label}, concurrency ${c.concurrency}: wall with the sampler vs without`,
      value: wallOn,
      unit: 'ms',
      baseline: wallOff,
      ratio: wallOn / wallOff,
      ...(c.label === '/bin/true' ? { target: 'ratio ≤ 1.05', met: wallOn / wallOff <= 1.05 } : {}),
      note: `ratios per run ${on.map((e, i) => fmt(e.wallMs / off[i].wallMs)).join(' / ')}`,
    });
    add({
      scenario: 'insight',
      measure: `${c.label}: launch helpers' extra CPU per attempt with the sampler`,
      value: ((helperOn - helperOff) / c.n) * 1000,
      unit: 'µs',
      note: `helpers' CPU ${fmt(helperOn)} ms with, ${fmt(helperOff)} ms without (10 ms ticks, summed over the pool)`,
    });
    add({
      scenario: 'insight',
      measure: `${c.label}: engine host's extra CPU per attempt with the sampler`,
      // (the engine host's CPU is noisy at the 10 ms tick; see the scan's own cost below)
      value: ((hostOn - hostOff) / c.n) * 1000,
      unit: 'µs',
      note: 'recording the figures with the attempt\'s end; the sampling itself is in the helpers',
    });
  }
  // One scan's own cost, timed here (the scan is the same code in a helper): what a helper pays every
  // 50-250 ms while attempts run, with this machine's number of processes.
  const sampler = new ResourceSampler();
  const sleepers = Array.from({ length: 4 }, () => spawn('sleep', ['60'], { detached: true, stdio: 'ignore' }));
  for (const s of sleepers) sampler.track(s);
  sampler.scan();
  const scans = 500;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < scans; i++) sampler.scan();
  const cpu = process.cpuUsage(cpu0);
  for (const s of sleepers) s.kill('SIGKILL');
  const processes = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
  add({
    scenario: 'insight',
    measure: `one /proc scan (4 attempts running, ${processes} processes on the machine): CPU`,
    value: (cpu.user + cpu.system) / scans,
    unit: 'µs',
    note: 'a scan walks each running attempt\'s tree: at most 10 a second (a burst of new attempts), 4 a second while long ones run',
  });
}

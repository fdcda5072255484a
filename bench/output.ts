// `npm run bench` scenario `output`: launch throughput with output capture on and off, /stats while
// an attempt prints BENCH_FLOOD_MB, launches beside that flood, the flood at the smallest cap, and
// (bench/outputReads.ts) reads of finely interleaved output. BENCH_OUTPUT_ONLY picks the parts.
import { fork, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { BUILD, CFG, TMP } from './config';
import { execArgv, runChild, type LaunchResult } from './children';
import { add, fmt, log, raw } from './results';
import { floodScript, mb, median, type LoopDelay } from './lib';
import { interleavedReads } from './outputReads';

interface FloodReport {
  ms: number;
  /** The attempt's own duration (spawn to output on disk), as the engine recorded it. */
  attemptMs: number | null;
  helperRssBefore: number;
  helperRssPeak: number;
  loop: LoopDelay;
}

const OUTPUT_PARTS = ['capture', 'flood', 'interleaved'];

export async function scenarioOutput(): Promise<void> {
  log('\n== output capture');
  const unknown = CFG.outputOnly.filter((part) => !OUTPUT_PARTS.includes(part));
  if (unknown.length) throw new Error(`BENCH_OUTPUT_ONLY names ${unknown.join(', ')}: the output scenario's parts are ${OUTPUT_PARTS.join(', ')} (comma-separated; unset runs them all)`);
  if (CFG.outputOnly.includes('capture')) await launchesWithCapture();
  if (CFG.outputOnly.includes('flood')) await flood();
  if (CFG.outputOnly.includes('interleaved')) await interleavedReads();
}

/** Launch throughput and the launch helper's CPU, capture on vs off. */
async function launchesWithCapture(): Promise<void> {
  // Each attempt prints a line on stdout and one on stderr: with capture on, two files and a
  // segment index per attempt, written by the launch helper.
  const command = '/bin/sh';
  const args = ['-c', 'echo "attempt output line"; echo "attempt error line" >&2'];
  const on: number[] = [];
  const off: number[] = [];
  const helperCpu: Record<'on' | 'off', number[]> = { on: [], off: [] };
  for (let r = 0; r < CFG.outputRuns; r++) {
    for (const capture of [false, true]) {
      const e = await runChild<LaunchResult>('launch', {
        root: path.join(TMP, 'output-launch'),
        items: CFG.outputItems,
        command,
        args,
        concurrency: CFG.concurrency,
        snapshotIntervalMs: CFG.launchSnapshotMs,
        captureOutput: capture,
      });
      if (e.launched !== CFG.outputItems) log(`  warning: ${e.launched} of ${CFG.outputItems} launched, ${e.failed} failed`);
      (capture ? on : off).push(e.wallMs);
      helperCpu[capture ? 'on' : 'off'].push(e.helperCpu?.selfMs ?? NaN);
      log(
        `  run ${r + 1}, capture ${capture ? 'on' : 'off'}: ${e.wallMs.toFixed(0)} ms (${((CFG.outputItems / e.wallMs) * 1000).toFixed(0)} launches/s; ` +
          `journal fdatasync ${e.fsyncMs.toFixed(0)} ms in ${e.fsyncs}, helper cpu ${e.helperCpu?.selfMs ?? '?'} ms, engine cpu ${e.cpuMs.toFixed(0)} ms)`,
      );
    }
  }
  raw['output launches'] = { captureOnMs: on, captureOffMs: off };
  const onMs = median(on);
  const offMs = median(off);
  add({
    scenario: 'output',
    measure: `${CFG.outputItems} × sh printing to stdout and stderr: launches/s with capture on vs off`,
    value: (CFG.outputItems / onMs) * 1000,
    unit: 'launches/s',
    baseline: (CFG.outputItems / offMs) * 1000,
    ratio: offMs / onMs,
    target: 'ratio ≥ 0.9',
    met: offMs / onMs >= 0.9,
    note: 'wall time: on a loaded machine it swings with the other load; the CPU row below is steadier',
  });
  const cpuOn = (median(helperCpu.on) / CFG.outputItems) * 1000;
  const cpuOff = (median(helperCpu.off) / CFG.outputItems) * 1000;
  add({
    scenario: 'output',
    measure: 'launch helper CPU per attempt, capture on vs off',
    value: cpuOn,
    unit: 'µs',
    baseline: cpuOff,
    ratio: cpuOn / cpuOff,
    note: 'the files are written by the helper: the engine host does no output I/O',
  });
}

/** One attempt printing BENCH_FLOOD_MB: /stats meanwhile, launches beside it, its duration, and at the smallest cap. */
async function flood(): Promise<void> {
  // /stats latency from this process, one request at a time: idle, then while an attempt prints 100 MB.
  const child = fork(path.join(BUILD, 'output.js'), [], {
    env: { ...process.env, BENCH_CONFIG: JSON.stringify({ root: path.join(TMP, 'output-flood'), floodMB: CFG.floodMB }) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: execArgv('output', true),
  });
  const next = <T>(type: string) => new Promise<T>((resolve) => child.on('message', (m: { type: string }) => m.type === type && resolve(m as T)));
  const { url } = await next<{ url: string }>('ready');
  const timeStats = async (until: () => boolean, minSamples: number): Promise<number[]> => {
    const times: number[] = [];
    while (!until() || times.length < minSamples) {
      const t0 = performance.now();
      await (await fetch(`${url}/stats`)).arrayBuffer();
      times.push(performance.now() - t0);
    }
    return times;
  };
  // The floor: the same program writing to /dev/null, spawned from here (its Node.js start included, as in the attempt's duration).
  const toDevNull: number[] = [];
  for (let r = 0; r < Math.max(3, CFG.outputRuns); r++) {
    const t0 = performance.now();
    const nul = openSync('/dev/null', 'w');
    await new Promise<void>((resolve, reject) => {
      const c = spawn(process.execPath, ['-e', floodScript(CFG.floodMB)], { stdio: ['ignore', nul, 'inherit'], detached: true });
      c.on('error', reject);
      c.on('exit', () => resolve());
    });
    closeSync(nul);
    toDevNull.push(performance.now() - t0);
  }
  const idleUntil = performance.now() + 2000;
  const idle = await timeStats(() => performance.now() > idleUntil, 200);
  let flooding = true;
  const flooded = next<FloodReport>('flooded').then((report) => {
    flooding = false;
    return report;
  });
  child.send({ type: 'flood' });
  const loaded = await timeStats(() => !flooding, 0);
  const report = await flooded;
  // Launches beside a busy slot: an attempt that sleeps, then one that prints 100 MB.
  const launchBatch = async (flood: boolean, batch: string) => {
    const reply = next<{ ms: number }>('launched');
    child.send({ type: 'launch', n: CFG.outputBatch, flood, batch });
    return (await reply).ms;
  };
  const besideSleep: number[] = [];
  const besideFlood: number[] = [];
  for (let r = 0; r < CFG.outputRuns; r++) {
    besideSleep.push(await launchBatch(false, `quiet${r}`));
    besideFlood.push(await launchBatch(true, `flood${r}`));
  }
  child.send({ type: 'exit' });
  await new Promise((resolve) => child.once('exit', resolve));
  raw['output launches beside a flood'] = { besideSleepMs: besideSleep, besideFloodMs: besideFlood };
  add({
    scenario: 'output',
    measure: `${CFG.outputBatch} × /bin/true while another attempt prints ${CFG.floodMB} MB, vs while it sleeps`,
    value: median(besideFlood),
    unit: 'ms',
    baseline: median(besideSleep),
    ratio: median(besideFlood) / median(besideSleep),
    target: 'ratio ≤ 1.5',
    met: median(besideFlood) / median(besideSleep) <= 1.5,
  });
  const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)];
  raw['output flood'] = { idleMs: idle, loadedMs: loaded, report };
  raw['output flood to /dev/null'] = { ms: toDevNull };
  add({
    scenario: 'output',
    measure: `/stats p99 while one attempt prints ${CFG.floodMB} MB (1 client, ${loaded.length} requests in ${fmt(report.ms)} ms)`,
    value: p99(loaded),
    unit: 'ms',
    baseline: p99(idle),
    ratio: p99(loaded) / p99(idle),
    target: '≤ 5 ms',
    met: p99(loaded) <= 5,
    note: 'baseline: the same engine idle',
  });
  // The output target: ≥ 200 MB/s, or as fast as the child writes (to /dev/null, same run).
  const attemptMs = report.attemptMs ?? report.ms;
  const nullMs = median(toDevNull);
  const rate = (CFG.floodMB / attemptMs) * 1000;
  add({
    scenario: 'output',
    measure: `${CFG.floodMB} MB printed and captured (10 MiB kept): the attempt's duration vs the same program writing to /dev/null`,
    value: attemptMs,
    unit: 'ms',
    baseline: nullMs,
    ratio: attemptMs / nullMs,
    target: '≥ 200 MB/s or ratio ≤ 1',
    met: rate >= 200 || attemptMs <= nullMs,
    note: `${fmt(rate)} MB/s captured (Node.js start included, as in the baseline's ${fmt((CFG.floodMB / nullMs) * 1000)} MB/s); enqueue to outcome ${fmt(report.ms)} ms; engine loop p99 ${report.loop.p99} ms, max ${report.loop.max} ms during the flood`,
  });
  await floodAtSmallestCap();
  add({
    scenario: 'output',
    measure: `launch helper RSS growth during the ${CFG.floodMB} MB flood`,
    value: (report.helperRssPeak - report.helperRssBefore) / (1024 * 1024),
    unit: 'MB',
    note: `from ${mb(report.helperRssBefore)} MB to a peak of ${mb(report.helperRssPeak)} MB`,
  });
}

/**
 * The flood at the smallest cap (64 KiB) against the default 10 MiB, each in an engine of its own,
 * alternating: a small cap rotates a 12 KiB tail segment every few writes, which once made a big
 * print 13 times slower.
 */
async function floodAtSmallestCap(): Promise<void> {
  const ms: Record<'small' | 'default', number[]> = { small: [], default: [] };
  for (let r = 0; r < CFG.outputRuns; r++) {
    for (const cap of ['default', 'small'] as const) {
      const config = { root: path.join(TMP, `output-cap-${cap}`), floodMB: CFG.floodMB, outputMaxBytes: cap === 'small' ? 64 * 1024 : undefined };
      const child = fork(path.join(BUILD, 'output.js'), [], {
        env: { ...process.env, BENCH_CONFIG: JSON.stringify(config) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        execArgv: execArgv('output', true),
      });
      const next = <T>(type: string) => new Promise<T>((resolve) => child.on('message', (m: { type: string }) => m.type === type && resolve(m as T)));
      await next('ready');
      const flooded = next<FloodReport>('flooded');
      child.send({ type: 'flood' });
      const report = await flooded;
      ms[cap].push(report.attemptMs ?? report.ms);
      child.send({ type: 'exit' });
      await new Promise((resolve) => child.once('exit', resolve));
      log(`  run ${r + 1}, ${cap === 'small' ? '64 KiB' : '10 MiB'} cap: the ${CFG.floodMB} MB attempt took ${fmt(report.attemptMs ?? report.ms)} ms`);
    }
  }
  raw['output flood by cap'] = ms;
  const ratio = median(ms.small) / median(ms.default);
  add({
    scenario: 'output',
    measure: `${CFG.floodMB} MB printed and captured at the smallest cap (64 KiB) vs the default 10 MiB: the attempt's duration`,
    value: median(ms.small),
    unit: 'ms',
    baseline: median(ms.default),
    ratio,
    target: 'ratio ≤ 2',
    met: ratio <= 2,
  });
}

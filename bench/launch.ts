// Scenario 2 of `npm run bench` (`launch`): the engine's launch throughput over `/bin/true` and
// `node -e 0` items, against a bare Node spawner, xargs -P (plain and setsid) and GNU parallel -j
// running the same commands in the same run.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { CFG, TMP } from './config';
import { runChild, type LaunchResult } from './children';
import { add, fmt, log, loopRows, raw } from './results';
import { mb, median, type LoopDelay } from './lib';

function xargs(command: string, args: string[], n: number, concurrency: number, setsid: boolean): Promise<number> {
  // The same N commands: xargs -P runs `command args…` once per input group.
  const perRun = args.length === 0 ? 1 : args.length;
  const group = args.length === 0 ? ['x'] : args;
  const input = Array.from({ length: n }, () => group.join('\n')).join('\n') + '\n';
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    // With setsid, each command runs in a session of its own, as the engine's detached process
    // groups do. That matters on Linux with autogroup scheduling: a new session is a new
    // scheduling group, so under machine load the engine's children get more CPU than plain
    // xargs's (which all share the runner's group).
    const cmd = setsid ? ['setsid', command] : [command];
    const child = spawn('xargs', ['-P', String(concurrency), '-n', String(perRun), '-d', '\n', ...cmd], { stdio: ['pipe', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`xargs exited with ${code}`))));
    child.stdin.end(input);
  });
}

/** GNU parallel's path, or null when it is not installed (the row then says so). */
function gnuParallel(): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const file = path.join(dir, 'parallel');
    // moreutils ships a different `parallel`; GNU's says so in --version.
    if (existsSync(file)) {
      const r = spawnSync(file, ['--version'], { encoding: 'utf8' });
      if (/GNU parallel/.test(r.stdout ?? '')) return file;
    }
  }
  return null;
}

/** GNU parallel -j running the same N commands, as a shell user would reach for it. */
function parallel(file: string, command: string, args: string[], n: number, concurrency: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    // -N0: each input line starts one job and none of it becomes an argument.
    const child = spawn(file, ['-j', String(concurrency), '-N0', '--will-cite', command, ...args], { stdio: ['pipe', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`parallel exited with ${code}`))));
    child.stdin.end('x\n'.repeat(n));
  });
}

export async function scenarioLaunch(): Promise<void> {
  log('\n== scenario 2: launch throughput');
  const cases = [
    { label: '/bin/true', command: '/bin/true', args: [] as string[], n: CFG.launchItems, runs: CFG.launchRuns },
    { label: 'node -e 0', command: process.execPath, args: ['-e', '0'], n: CFG.nodeItems, runs: CFG.nodeRuns },
  ];
  const allLoops: LoopDelay[] = [];
  const allSnapshots: number[] = [];
  const allWorkerMs: number[] = [];
  const gnu = gnuParallel();
  if (!gnu) log('  GNU parallel is not installed: no parallel -j baseline in this run');
  for (const c of cases) {
    const n = c.n;
    const xs: number[] = [];
    const ss: number[] = [];
    const ns: { wallMs: number; cpuMs: number }[] = [];
    const ps: number[] = [];
    const es: LaunchResult[] = [];
    for (let r = 0; r < c.runs; r++) {
      xs.push(await xargs(c.command, c.args, n, CFG.concurrency, false));
      ss.push(await xargs(c.command, c.args, n, CFG.concurrency, true));
      ns.push(await runChild<{ wallMs: number; cpuMs: number }>('spawner', { items: n, command: c.command, args: c.args, concurrency: CFG.concurrency }));
      if (gnu) ps.push(await parallel(gnu, c.command, c.args, n, CFG.concurrency));
      const e = await runChild<LaunchResult>('launch', {
        root: path.join(TMP, 'launch'),
        items: n,
        command: c.command,
        args: c.args,
        concurrency: CFG.concurrency,
        snapshotIntervalMs: CFG.launchSnapshotMs,
        launchHelpers: CFG.launchHelpers,
      });
      if (e.launched !== n) log(`  warning: ${e.launched} of ${n} launched, ${e.failed} failed`);
      es.push(e);
      allLoops.push(e.loop);
      allSnapshots.push(...e.snapshots);
      allWorkerMs.push(...(e.workerMs ?? []));
      if (e.launcher !== 'helper') log('  warning: the engine launched in-process (no launch helper found)');
      log(
        `  ${c.label} run ${r + 1}: xargs ${xs[r].toFixed(0)} ms, xargs+setsid ${ss[r].toFixed(0)} ms, bare Node spawner ${ns[r].wallMs.toFixed(0)} ms` +
          `${gnu ? `, parallel ${ps[r].toFixed(0)} ms` : ''}, engine ${e.wallMs.toFixed(0)} ms ` +
          `(cpu ${e.cpuMs.toFixed(0)} ms, ${e.helpers ?? 1} helper(s) cpu ${e.helperCpu?.selfMs ?? '?'} ms, ${e.workerMs?.length ?? 0} checkpoint(s), loop p99 ${e.loop.p99} ms, max ${e.loop.max} ms)`,
      );
    }
    raw[`launch ${c.label}`] = { xargsMs: xs, xargsSetsidMs: ss, bareNodeSpawner: ns, parallelMs: ps, engine: es };
    const x = median(xs);
    const xs2 = median(ss);
    const bare = median(ns.map((r) => r.wallMs));
    const e = median(es.map((r) => r.wallMs));
    // The launch target: against Node's own floor, the bare spawner (bench/child/spawner.ts).
    add({
      scenario: 'launch',
      measure: `${n} × ${c.label}, concurrency ${CFG.concurrency}, capture on: engine wall vs a bare Node spawner`,
      value: e,
      unit: 'ms',
      baseline: bare,
      ratio: e / bare,
      target: 'ratio ≤ 1.2',
      met: e / bare <= 1.2,
      note: `the spawner's own CPU ${fmt((median(ns.map((r) => r.cpuMs)) / n) * 1000)} µs per item; ratios per run ${es.map((r, i) => fmt(r.wallMs / ns[i].wallMs)).join(' / ')}`,
    });
    add({
      scenario: 'launch',
      measure: `${n} × ${c.label}, concurrency ${CFG.concurrency}: engine wall vs xargs -P ${CFG.concurrency}`,
      value: e,
      unit: 'ms',
      baseline: x,
      ratio: e / x,
      note: `bare Node spawner vs xargs: ${fmt(bare / x)}×`,
    });
    add({
      scenario: 'launch',
      measure: `${n} × ${c.label}: engine wall vs xargs -P ${CFG.concurrency} setsid (same scheduling groups as the engine)`,
      value: e,
      unit: 'ms',
      baseline: xs2,
      ratio: e / xs2,
    });
    if (gnu) {
      const p = median(ps);
      add({ scenario: 'launch', measure: `${n} × ${c.label}: engine wall vs GNU parallel -j ${CFG.concurrency}`, value: e, unit: 'ms', baseline: p, ratio: e / p });
    }
    add({ scenario: 'launch', measure: `${c.label}: extra wall per item vs xargs`, value: ((e - x) / n) * 1000, unit: 'µs' });
    const hostCpu = (median(es.map((r) => r.cpuMs)) / n) * 1000;
    // The launch target is the main thread's CPU; the process also runs V8's compiler and GC threads
    // and the thread pool's fdatasyncs, reported beside it.
    const mainCpus = es.map((r) => r.mainThreadCpuMs).filter((v): v is number => typeof v === 'number');
    const mainCpu = mainCpus.length === es.length ? (median(mainCpus) / n) * 1000 : null;
    add({
      scenario: 'launch',
      measure: `${c.label}: engine host CPU per item`,
      value: hostCpu,
      unit: 'µs',
      ...(mainCpu === null ? { target: '≤ 300 µs', met: hostCpu <= 300 } : {}),
      note: 'the whole process: main thread, V8 compiler and GC threads, thread-pool fdatasyncs, snapshot workers',
    });
    if (mainCpu !== null) {
      add({
        scenario: 'launch',
        measure: `${c.label}: engine host main-thread CPU per item`,
        value: mainCpu,
        unit: 'µs',
        target: '≤ 300 µs',
        met: mainCpu <= 300,
        note: `scheduling, journaling, logging on the event loop (Linux, 10 ms ticks); other threads ${fmt(hostCpu - mainCpu)} µs per item`,
      });
    }
    add({
      scenario: 'launch',
      measure: `${c.label}: launch helper CPU per item`,
      value: (median(es.map((r) => r.helperCpu?.selfMs ?? NaN)) / n) * 1000,
      unit: 'µs',
      note: `the helpers' own processes, summed over the pool of ${es[0]?.helpers ?? '?'} (their start included); checkpoints per run: ${es.map((r) => r.workerMs?.length ?? 0).join(' / ')}`,
    });
    add({
      scenario: 'launch',
      measure: `${c.label}: main thread blocked in spawn() per item`,
      value: (median(es.map((r) => r.spawnMs)) / n) * 1000,
      unit: 'µs',
      note: 'engine main thread: the one fork() of its launch helper; attempts are spawned by the helper',
    });
    add({
      scenario: 'launch',
      measure: `${c.label}: launch helper blocked in spawn() per item`,
      value: (median(es.map((r) => r.helperSpawnMs)) / n) * 1000,
      unit: 'µs',
      note: `fork + exec handshake in the launch helper, off the engine's event loop; helpers' RSS (summed) ${mb(median(es.map((r) => r.helperRss ?? 0)))} MB`,
    });
    add({
      scenario: 'launch',
      measure: `${c.label}: journal fdatasync per item`,
      value: (median(es.map((r) => r.fsyncMs)) / n) * 1000,
      unit: 'µs',
      note: `${(median(es.map((r) => r.fsyncs)) / n).toFixed(2)} fsyncs per item`,
    });
  }
  const worst: LoopDelay = {
    p50: median(allLoops.map((l) => l.p50)),
    p99: Math.max(...allLoops.map((l) => l.p99)),
    max: Math.max(...allLoops.map((l) => l.max)),
    mean: median(allLoops.map((l) => l.mean)),
    samples: allLoops.reduce((s, l) => s + l.samples, 0),
    stalls: allLoops.flatMap((l) => l.stalls ?? []).sort((a, b) => b.ms - a.ms).slice(0, 20),
  };
  loopRows('launch', 'engine host during launches (worst run)', worst, allSnapshots, allWorkerMs);
}

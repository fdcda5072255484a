// Part of scenario 3 (`startup`): `engine-monitor serve` from exec to its "listening" line on the demo
// workspace (examples/demo), as a window that starts the engine waits for it, with V8's code cache
// (src/host/codeCache.ts) against without it. Starts alternate, each on a fresh storage folder, so a
// busy spell of the machine falls on both; wall time and the process's CPU (from /proc, all its
// threads) at the moment the line is printed.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { ENGINE_HOST_NODE_OPTIONS } from '../src/shared/hostProtocol';
import { QUICK, TMP } from './config';
import { median } from './lib';
import { add, log, raw } from './results';

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');
const DEMO = path.join(ROOT, 'examples', 'demo');

interface Start {
  wallMs: number;
  cpuMs: number;
}

/** One start; `cache`: the folder for ENGINE_MONITOR_CODE_CACHE, or 'off'. `holdMs`: keep it running that long after "listening". */
async function start(cache: string, holdMs = 0): Promise<Start> {
  const root = mkdtempSync(path.join(TMP, 'host-start-'));
  const workspace = path.join(root, 'ws');
  cpSync(DEMO, workspace, { recursive: true });
  // The demo's slow item would still be running at the end; the start is what is measured.
  unlinkSync(path.join(workspace, '.engine', 'queue', 'slow.json'));
  const began = performance.now();
  const child = spawn(process.execPath, [...ENGINE_HOST_NODE_OPTIONS, CLI, 'serve', '--workspace', workspace, '--storage', path.join(root, 'storage'), '--port', '0', '--quiet'], {
    env: { ...process.env, ENGINE_MONITOR_CODE_CACHE: cache },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const result = await new Promise<Start>((resolve, reject) => {
      let out = '';
      let err = '';
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      child.once('exit', (code) => reject(new Error(`serve exited with ${code} before it was listening: ${err}`)));
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (!/^listening on /m.test(out)) return;
        const wallMs = performance.now() - began;
        // utime and stime, in clock ticks (100 a second on Linux), after the command name's parentheses.
        const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
        resolve({ wallMs, cpuMs: (Number(fields[11]) + Number(fields[12])) * 10 });
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
      });
    });
    if (holdMs) await new Promise((r) => setTimeout(r, holdMs));
    return result;
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    rmSync(root, { recursive: true, force: true });
  }
}

export async function scenarioHostStart(): Promise<void> {
  const runs = QUICK ? 5 : 15;
  const cache = mkdtempSync(path.join(TMP, 'code-cache-'));
  try {
    // The first start writes the cache 3 s after it began.
    await start(cache, 4000);
    const on: Start[] = [];
    const off: Start[] = [];
    for (let i = 0; i < runs; i++) {
      off.push(await start('off'));
      on.push(await start(cache));
    }
    raw.hostStart = { on, off };
    const m = (runs: Start[], f: (s: Start) => number) => median(runs.map(f));
    log(`  serve to "listening", demo workspace: wall ${m(on, (s) => s.wallMs).toFixed(0)} ms with the code cache, ${m(off, (s) => s.wallMs).toFixed(0)} ms without; CPU ${m(on, (s) => s.cpuMs)} / ${m(off, (s) => s.cpuMs)} ms`);
    for (const [what, f, unit] of [
      ['wall time', (s: Start) => s.wallMs, 'ms'],
      ['CPU (all its threads)', (s: Start) => s.cpuMs, 'ms CPU'],
    ] as const) {
      const value = m(on, f);
      const baseline = m(off, f);
      add({
        scenario: 'startup',
        measure: `engine-monitor serve to "listening", demo workspace, ${what}: V8's code cache / without`,
        value,
        unit,
        baseline,
        ratio: value / baseline,
        note: `medians of ${runs} alternating starts each, a fresh storage folder each`,
      });
    }
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}

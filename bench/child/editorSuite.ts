// Scenario 4, inside the extension host. bench/editor.ts loads this file as the window's
// "extension tests" (extensionTestsPath), so its code runs in the very process and on the very
// event loop that hosts Engine Monitor: a perf_hooks.monitorEventLoopDelay histogram started here
// measures the extension host's event loop, with no hook in the extension's own code.
//
// It waits until VS Code has activated the extension by itself (it never calls activate()), opens
// the Engine Monitor view container (views refresh as for a user watching), tells the runner it is
// ready and waits for its go (the runner reads the activation time from "Show Running Extensions"
// meanwhile), then measures: idle (no launches) for `idleMs`, then while the engine launches N
// queued `/bin/true` items, from dropping the queue files until /stats shows them all done. Both
// windows poll /stats at the same 500 ms cadence, so they differ only in the launches.
// The result goes to BENCH_EDITOR_RESULT as JSON; run() resolving ends the window.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import * as vscode from 'vscode';

interface Config {
  extensionId: string;
  items: number;
  idleMs: number;
  readyFile: string;
  goFile: string;
  resultFile: string;
  timeoutMs: number;
  /** When set, a CPU profile of the extension host during the launches is written here. */
  profileFile?: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Overview {
  total: number;
  launched: number;
  pending: number;
  failed: number;
}

async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`editor bench: timed out waiting for ${what}`);
    await sleep(100);
  }
}

function histogram() {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  // Stalls over 50 ms with when they began (ms after the window opened), to tell what they were.
  const t0 = performance.now();
  let last = t0;
  const stalls: { at: number; ms: number }[] = [];
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - last > 60) stalls.push({ at: Math.round(last - t0), ms: Math.round(now - last - 10) });
    last = now;
  }, 10);
  return {
    read() {
      clearInterval(timer);
      h.disable();
      const ms = (ns: number) => Math.round((ns / 1e6) * 100) / 100;
      return { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), mean: ms(h.mean), samples: h.count, stalls };
    },
  };
}

export async function run(): Promise<void> {
  const config = JSON.parse(process.env.BENCH_EDITOR_CONFIG ?? '{}') as Config;
  const ext = await until('the extension to be registered', () => vscode.extensions.getExtension(config.extensionId), 60_000);
  await until('VS Code to activate the extension', () => (ext.isActive ? true : undefined), 60_000);
  const api = ext.exports as { baseUrl(): string | undefined; _testing?: { activationMs?: number } };
  const baseUrl = await until('the engine URL', () => api.baseUrl(), 60_000);
  const stats = async (): Promise<Overview> => ((await (await fetch(`${baseUrl}/stats`)).json()) as { overview: Overview }).overview;
  await until('the engine to answer /stats', () => stats().catch(() => undefined), 60_000);
  await vscode.commands.executeCommand('workbench.view.extension.engineMonitor');

  writeFileSync(config.readyFile, '');
  await until('the runner’s go', () => (existsSync(config.goFile) ? true : undefined), 120_000);

  // Idle baseline: the same polling, no launches. The first second after the go is let settle.
  await sleep(1000);
  const before = await stats();
  let h = histogram();
  const idleStart = Date.now();
  while (Date.now() - idleStart < config.idleMs) {
    await sleep(500);
    await stats();
  }
  const idle = h.read();

  // Launches: N items in .jsonl files of 500 (the engine refuses a file over 1 MiB), written
  // as scripts enqueue (temp + rename). The workspace's queue directory is .engine/queue.
  const queue = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  const session = config.profileFile ? new Session() : undefined;
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session!.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))));
  if (session) {
    session.connect();
    await post('Profiler.enable');
    await post('Profiler.start');
  }
  h = histogram();
  const floor = floorProbe();
  const t0 = Date.now();
  for (let f = 0; f * 500 < config.items; f++) {
    const lines: string[] = [];
    for (let i = f * 500; i < Math.min(config.items, (f + 1) * 500); i++) lines.push(JSON.stringify({ id: `editor-bench-${i}`, command: '/bin/true' }));
    const file = path.join(queue, `editor-bench-${String(f).padStart(3, '0')}.jsonl`);
    writeFileSync(`${file}.tmp`, lines.join('\n') + '\n');
    renameSync(`${file}.tmp`, file);
  }
  let last = before;
  for (;;) {
    await sleep(500);
    last = await stats();
    if (last.total >= before.total + config.items && last.pending === 0 && last.launched + last.failed >= last.total) break;
    if (Date.now() - t0 > config.timeoutMs) throw new Error(`editor bench: launches not done after ${config.timeoutMs} ms: ${JSON.stringify(last)}`);
  }
  const wallMs = Date.now() - t0;
  const launches = h.read();
  const probe = await floor.read();
  if (session) {
    const { profile } = (await post('Profiler.stop')) as { profile: unknown };
    writeFileSync(config.profileFile!, JSON.stringify(profile));
    session.disconnect();
  }

  writeFileSync(
    config.resultFile,
    JSON.stringify({ idle, launches, probe, wallMs, before, after: last, selfTimedActivationMs: api._testing?.activationMs }),
  );
}

/**
 * The floor for the launches' figure: a Node.js process that does nothing but measure its own
 * event-loop delay the same way, started beside the extension host for the same launches. On two
 * cores the engine, its launch helpers and the launched processes take the CPU, and any process
 * then waits to be scheduled: what the probe sees is that wait, and what the extension host sees
 * above it is its own work. It reports when its stdin gets a line.
 */
function floorProbe(): { read(): Promise<{ p50: number; p99: number; max: number; mean: number; samples: number }> } {
  const code = `
const { monitorEventLoopDelay } = require('node:perf_hooks');
const h = monitorEventLoopDelay({ resolution: 1 });
h.enable();
setInterval(() => {}, 10);
process.stdin.once('data', () => {
  h.disable();
  const ms = (ns) => Math.round((ns / 1e6) * 100) / 100;
  process.stdout.write(JSON.stringify({ p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), mean: ms(h.mean), samples: h.count }), () => process.exit(0));
});`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    async read() {
      child.stdin.write('report\n');
      await exited;
      return JSON.parse(out) as { p50: number; p99: number; max: number; mean: number; samples: number };
    },
  };
}

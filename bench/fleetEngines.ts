// Headless engines of a fleet as real processes (dist/cli.js serve --store postgres://…), for the
// fleet bench rows and the fleet drain loop (test/soak/fleetDrain.ts): started, watched (exit,
// stderr) and stopped the same way by both.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The built CLI; ENGINE_MONITOR_CLI points at a copy, so a long loop is not changed by a rebuild under it. */
export const CLI = process.env.ENGINE_MONITOR_CLI ?? path.resolve(__dirname, '..', 'dist', 'cli.js');

export function assertFleetBuilt(): void {
  if (!existsSync(CLI) || !existsSync(path.join(path.dirname(CLI), 'pg-worker.js'))) throw new Error('run "npm run build" first (dist/cli.js and dist/pg-worker.js)');
}

export interface FleetEngine {
  child: ChildProcess;
  url: string;
  /** Set once the process exited, with when (performance.now()). */
  exit: { code: number | null; signal: NodeJS.Signals | null; at: number } | null;
  stderr(): string;
  exited: Promise<void>;
}

export interface FleetEngineOptions {
  workspace: string;
  storage: string;
  url: string;
  queueDir?: string;
  concurrency?: number;
  pollIntervalMs?: number;
  extra?: string[];
}

/** Starts one engine and resolves once it listens; rejects when it exits before. */
export async function startFleetEngine(o: FleetEngineOptions): Promise<FleetEngine> {
  const queueDir = o.queueDir ?? '.engine/queue';
  mkdirSync(path.join(o.workspace, queueDir), { recursive: true });
  const args = [CLI, 'serve', '--workspace', o.workspace, '--storage', o.storage, '--port', '0', '--quiet', '--store', o.url];
  args.push('--concurrency', String(o.concurrency ?? 4), '--poll-interval', String(o.pollIntervalMs ?? 1000), '--queue-dir', queueDir, ...(o.extra ?? []));
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c: Buffer) => {
    err += c.toString();
    if (err.length > 200_000) err = err.slice(-100_000);
  });
  const engine: FleetEngine = {
    child,
    url: '',
    exit: null,
    stderr: () => err,
    exited: new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        engine.exit = { code, signal, at: performance.now() };
        resolve();
      }),
    ),
  };
  engine.url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^listening on (\S+)$/m.exec(out);
      if (m) resolve(m[1]);
    });
    void engine.exited.then(() => reject(new Error(`fleet engine exited (${engine.exit?.code ?? engine.exit?.signal}) before it listened:\n${err}`)));
  });
  return engine;
}

/** SIGTERM, and how long the engine took to exit (SIGKILL after `graceMs`). */
export async function stopFleetEngine(e: FleetEngine, graceMs = 30_000): Promise<number> {
  const t0 = performance.now();
  if (e.exit) return 0;
  e.child.kill('SIGTERM');
  const timer = setTimeout(() => e.child.kill('SIGKILL'), graceMs);
  await e.exited;
  clearTimeout(timer);
  return performance.now() - t0;
}

/** A queue file the way scripts should write one: a temporary name, then a rename into the folder. Returns the time of the rename. */
export function enqueue(workspace: string, name: string, items: unknown[], queueDir = '.engine/queue'): number {
  const file = path.join(workspace, queueDir, name);
  writeFileSync(`${file}.tmp`, name.endsWith('.jsonl') ? items.map((i) => JSON.stringify(i)).join('\n') + '\n' : JSON.stringify(items));
  const at = performance.now();
  renameSync(`${file}.tmp`, file);
  return at;
}

/** `token`: the engine's, when it was started with one (it then guards reads too). */
export async function getJson<T>(url: string, timeoutMs = 10_000, token?: string): Promise<T> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) }).catch((err: Error & { cause?: { code?: string } }) => {
    throw new Error(`${url}: ${err.message} (${err.cause?.code ?? err.name})`);
  });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return (await res.json()) as T;
}

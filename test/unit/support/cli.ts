// Runs the built CLI (dist/cli.js) as a real child process, as users and the extension do.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LogEntry } from '../../../src/shared/api';

export const CLI = path.resolve(__dirname, '../../../dist/cli.js');

export function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run "npm run build" first (npm test does)`);
}

/** The command-line client as a user runs it: no engine address or token from this environment. */
export function runClient(args: string[]): { stdout(): string; stderr(): string; exited: Promise<number | null>; kill(): void } {
  assertBuilt();
  const { ENGINE_MONITOR_URL: _u, ENGINE_MONITOR_TOKEN: _t, ...env } = process.env;
  const child = spawn(process.execPath, [CLI, ...args], { cwd: os.tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { stdout: () => out, stderr: () => err, exited, kill: () => child.kill('SIGTERM') };
}

export interface ServeProcess {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs the CLI with this process's environment and `env` on top, but never an inherited
 * ENGINE_MONITOR_TOKEN (a test run from a VS Code terminal has one): a test gives it explicitly.
 */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcessWithoutNullStreams; stdout(): string; stderr(): string; exited: ServeProcess['exited'] } {
  assertBuilt();
  const { ENGINE_MONITOR_TOKEN: _inherited, ...inherited } = process.env;
  const child = spawn(process.execPath, [CLI, ...args], { stdio: 'pipe', env: { ...inherited, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Starts `serve` and resolves once it printed its ready line. */
export async function serve(args: string[], timeoutMs = 20_000, env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  const run = runCli(['serve', '--port', '0', '--quiet', ...args], env);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line within ${timeoutMs} ms:\n${run.stdout()}\n${run.stderr()}`)), timeoutMs);
    const check = () => {
      const m = /^listening on (http:\/\/\S+)$/m.exec(run.stdout());
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    run.child.stdout.on('data', check);
    void run.exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before it was ready:\n${run.stdout()}\n${run.stderr()}`));
    });
  });
  return { ...run, url };
}

/** fetch(), its failure naming the URL and the cause ("fetch failed" alone says neither). */
export async function fetchOrSay(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`${url}: ${(err as Error).message} (${cause?.code ?? cause?.message ?? 'no cause given'})`, { cause: err });
  }
}

/**
 * fetchOrSay() to an engine this test started: a failure also says whether that engine is still
 * alive (or how it exited) and ends with its stderr, which is what a "fetch failed" on a loaded
 * machine needs to be told apart from an engine that went away.
 */
export async function fetchFromEngine(engine: ServeProcess, url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetchOrSay(url, init);
  } catch (err) {
    const { exitCode, signalCode, pid } = engine.child;
    const state = exitCode === null && signalCode === null ? `the engine (pid ${pid}) is still running` : `the engine (pid ${pid}) exited with ${exitCode ?? signalCode}`;
    throw new Error(`${(err as Error).message}; ${state}; the end of its stderr:\n${engine.stderr().slice(-2000)}`, { cause: err });
  }
}

export async function getJson<T = any>(url: string): Promise<T> {
  const res = await fetchOrSay(url);
  if (!res.ok && res.status !== 503) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Every log entry, oldest first, following the Link header page by page. */
export async function allLogs(url: string): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  let next: string | undefined = `${url}/logs?order=asc&limit=1000`;
  while (next) {
    const res: Response = await fetchOrSay(next);
    out.push(...((await res.json()) as LogEntry[]));
    next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return out;
}

/** Live processes whose command line contains `needle` (Linux /proc), this one excepted. */
export function processesMentioning(needle: string): { pid: number; cmdline: string }[] {
  if (!existsSync('/proc')) return [];
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmdline.includes(needle)) found.push({ pid: Number(entry), cmdline });
    } catch {
      // gone already
    }
  }
  return found;
}

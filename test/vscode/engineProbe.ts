// What the workbench-driven tests (test/ui, test/package) and the editor bench need to find and read
// the engine that the extension started inside code-server: polling, the endpoint.json its host
// writes into the extension's workspace storage, JSON reads of its API, and the memory of the
// extension host that forked it.
import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { EndpointFile } from '../../src/shared/hostProtocol';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` every 250 ms until it gives a value; the last error is in the timeout's message. */
export async function waitUntil<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(250);
  }
}

/** Files named one of `names` under `root` (a code-server user-data-dir), in Engine Monitor's storage. */
function* storageFilesNamed(root: string, names: readonly string[]): Generator<string> {
  const stack = [root];
  while (stack.length) {
    const dir = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) stack.push(p);
      else if (names.includes(e.name) && p.includes('engine-monitor')) yield p;
    }
  }
}

/** The path of endpoint.json under `root` (a code-server user-data-dir), in Engine Monitor's storage. */
export function findEndpointFile(root: string): string | undefined {
  for (const p of storageFilesNamed(root, ['endpoint.json'])) return p;
  return undefined;
}

/** The engine's endpoint.json ({ url, pid, startedAt }), or undefined while there is none (or it is being written). */
export function readEndpoint(root: string): EndpointFile | undefined {
  const file = findEndpointFile(root);
  if (!file) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as EndpointFile;
  } catch {
    return undefined;
  }
}

/** The engine's URL, from its endpoint.json. */
export function findEndpoint(root: string): string | undefined {
  return readEndpoint(root)?.url;
}

/** GET a JSON endpoint; 200 and 503 (an unhealthy /health) are answers, anything else fails the test. */
export async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  assert.ok(res.ok || res.status === 503, `GET ${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

/**
 * The extension host's resident memory, in MB: the parent of the engine host of the window whose
 * user data folder is `userDataDir` (the extension forks the host, and the host's command line names
 * that folder). Linux only: it reads /proc.
 */
export function extensionHostRssMb(userDataDir: string): number {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.includes('cli.js\0serve') || !cmdline.includes(userDataDir)) continue;
    const ppid = /^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1];
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${ppid}/status`, 'utf8'))![1];
    return Number(rss) / 1024;
  }
  throw new Error(`no engine host of ${userDataDir} found (none of the running processes is a \`cli.js serve\` naming that folder)`);
}

/**
 * Ends every engine host whose engine.lock or control.json lies under `root` (a code-server
 * user-data-dir). The host is detached from VS Code and outlives it by design (until its
 * keep-alive passes), so a test that started one ends it: SIGTERM, then SIGKILL after 10 s.
 * Returns the pids it ended.
 */
export async function endEngineHosts(root: string): Promise<number[]> {
  const pids = new Set<number>();
  for (const p of storageFilesNamed(root, ['engine.lock', 'control.json'])) {
    try {
      const pid = (JSON.parse(readFileSync(p, 'utf8')) as { pid?: unknown }).pid;
      if (typeof pid === 'number' && Number.isInteger(pid) && pid > 0) pids.add(pid);
    } catch {
      // being written or removed
    }
  }
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };
  const ended: number[] = [];
  for (const pid of pids) {
    if (!alive(pid)) continue;
    ended.push(pid);
    process.kill(pid, 'SIGTERM');
  }
  const deadline = Date.now() + 10_000;
  while (ended.some(alive) && Date.now() < deadline) await sleep(100);
  for (const pid of ended.filter(alive)) process.kill(pid, 'SIGKILL');
  return ended;
}

// Real temporary workspaces and engines for the core tests: real folders, real files, a real
// sql.js database on disk, real processes.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Engine, type EngineOptions } from '../../../src/core/kernel/engine';
import type { ItemDefinition } from '../../../src/core/intake/items';
import { locateLaunchHelper } from '../../../src/host/launchHelperEntry';
import type { LogEntry } from '../../../src/shared/api';

export const NODE = process.execPath;

export class TempWorkspace {
  readonly root: string;
  readonly folder: string;
  readonly queue: string;
  readonly storage: string;

  constructor(prefix = 'engine-ws-') {
    this.root = mkdtempSync(path.join(os.tmpdir(), prefix));
    this.folder = path.join(this.root, 'ws');
    this.queue = path.join(this.folder, '.engine', 'queue');
    this.storage = path.join(this.root, 'storage');
    mkdirSync(this.queue, { recursive: true });
  }

  /** Writes a queue file the way scripts should: temporary name, then rename. */
  enqueue(name: string, content: unknown): string {
    const file = path.join(this.queue, name);
    const text = typeof content === 'string' || Buffer.isBuffer(content) ? content : JSON.stringify(content);
    writeFileSync(`${file}.tmp`, text);
    require('node:fs').renameSync(`${file}.tmp`, file);
    return file;
  }

  options(overrides: Partial<EngineOptions> = {}): EngineOptions {
    return {
      workspaceFolders: [this.folder],
      storageDir: this.storage,
      queueDirectory: '.engine/queue',
      pollIntervalMs: 100,
      concurrency: 4,
      maxAttempts: 3,
      timeoutMs: 30_000,
      logMaxEntries: 100_000,
      logMaxAgeDays: 14,
      initialMode: 'running',
      version: '0.0.0-test',
      backoffBaseMs: 20,
      backoffMaxMs: 200,
      // As the engine host does: the helper's source under tsx, so tests run what they test.
      launchHelper: locateLaunchHelper(),
      ...overrides,
    };
  }

  dispose(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** A whole item definition (what parseItem produces), for launching without a queue file. */
export function itemDefinition(overrides: Partial<ItemDefinition>): ItemDefinition {
  return {
    id: 'x',
    name: 'x',
    command: NODE,
    args: ['-e', '0'],
    shell: false,
    cwd: os.tmpdir(),
    env: {},
    timeoutMs: 30_000,
    maxAttempts: 1,
    runAt: null,
    ...overrides,
  };
}

/** A zombie counts as gone: it runs nothing, and its reaper (init here, or a subreaper) may be slow. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** A node command line that runs `code`. */
export function nodeItem(id: string, code: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, command: NODE, args: ['-e', code], ...extra };
}

/** Polls `probe` (sync or async: a promise is awaited, never taken as a truthy answer) until it gives a value. */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until no item is pending. */
export function settled(engine: Engine, timeoutMs = 20_000): Promise<true> {
  return waitFor('every item to reach an outcome', () => engine.stats().pending === 0 && engine.status().engine.running === 0, timeoutMs);
}

export function allLogs(engine: Engine): LogEntry[] {
  const out: LogEntry[] = [];
  let afterId: number | undefined;
  for (;;) {
    const page = engine.queryLogs({ order: 'asc', limit: 1000, afterId });
    out.push(...page.entries);
    if (!page.hasMore) return out;
    afterId = page.entries[page.entries.length - 1].id;
  }
}

export function assertInvariants(engine: Engine): void {
  const s = engine.stats();
  if (s.total !== s.launched + s.pending + s.failed) throw new Error(`total ${s.total} != launched+pending+failed in ${JSON.stringify(s)}`);
  const running = engine.status().engine.running;
  if (s.totalLaunches !== s.launched + s.totalFailed + running) {
    throw new Error(`totalLaunches ${s.totalLaunches} != launched ${s.launched} + totalFailed ${s.totalFailed} + running ${running}`);
  }
}

/**
 * Makes every file an attempt's output could be written to /dev/full, where each write fails with
 * ENOSPC: the head file of output written as it comes, and the single file of a short attempt's
 * output written when it ends (src/core/features/output/outputFiles.ts). Call it once the engine runs: at its
 * start it removes files of attempts its database never had.
 */
export function outputOnFullDisk(outputDir: string, attemptId: number): void {
  mkdirSync(outputDir, { recursive: true });
  for (const name of [`${attemptId}.out`, `${attemptId}.o`]) require('node:fs').symlinkSync('/dev/full', path.join(outputDir, name));
}

// One engine per storage folder: `engine.lock` holds the owner's pid and URL.
// A second engine (another VS Code window on the same workspace, or a second `serve`) finds the
// lock held by a live process and attaches to that engine instead of starting its own.
import { closeSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { EngineLock } from '../shared/hostProtocol';

export const LOCK_FILE = 'engine.lock';

export interface HeldLock {
  acquired: true;
  release(): void;
  update(lock: EngineLock): void;
}

export type LockResult = HeldLock | { acquired: false; holder: EngineLock };

export function acquireLock(storageDir: string, startedAt: string): LockResult {
  const file = path.join(storageDir, LOCK_FILE);
  const mine: EngineLock = { pid: process.pid, url: '', startedAt };
  for (let tries = 0; tries < 3; tries++) {
    try {
      // O_EXCL: of two engines racing for the folder, exactly one creates the file.
      const fd = openSync(file, 'wx');
      writeSync(fd, JSON.stringify(mine));
      closeSync(fd);
      return {
        acquired: true,
        update: (lock) => writeAtomically(file, lock),
        release: () => {
          try {
            const current = JSON.parse(readFileSync(file, 'utf8')) as EngineLock;
            if (current.pid === process.pid) unlinkSync(file);
          } catch {
            // already gone
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = readLock(file);
    if (holder && holder.pid !== process.pid && isAlive(holder.pid)) return { acquired: false, holder };
    // A lock left by a dead process (crash, kill -9): take it over.
    try {
      unlinkSync(file);
    } catch {
      // someone else removed it first; try again
    }
  }
  throw new Error(`could not acquire ${file}; another engine keeps taking it`);
}

function readLock(file: string): EngineLock | undefined {
  try {
    const lock = JSON.parse(readFileSync(file, 'utf8')) as EngineLock;
    return typeof lock.pid === 'number' ? lock : undefined;
  } catch {
    return undefined; // torn or empty: treat as stale
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function writeAtomically(file: string, value: unknown): void {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n');
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

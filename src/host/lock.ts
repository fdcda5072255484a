// One engine per storage folder: `engine.lock` holds the owner's pid and URL, and who that pid was
// (its start time and the machine's boot id; on Windows, when the machine booted), because after a
// reboot or a long uptime the same pid can belong to an unrelated process.
// A second engine (another VS Code window on the same workspace, or a second `serve`) finds the
// lock held by a live process and attaches to that engine instead of starting its own.
import { closeSync, fstatSync, linkSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EngineLock } from '../shared/hostProtocol';
import { storageError, writeStorageFile } from './storageFiles';
import { isAlive } from '../shared/processAlive';

export const LOCK_FILE = 'engine.lock';

/**
 * A lock file that cannot be read (empty, torn) and is younger than this is held: its writer may
 * be an engine that has not written it yet (an older version created it first and wrote it after).
 * Older, it is a leftover of a crash and is taken over.
 */
export const UNREADABLE_LOCK_GRACE_MS = 5000;

/** What `engine.lock` holds: the public fields, and who the owning process is. */
export interface LockRecord extends EngineLock {
  /** The owner's start time, in clock ticks since boot (`/proc/<pid>/stat` field 22); Linux only. */
  processStart?: number;
  /** `/proc/sys/kernel/random/boot_id` when the lock was written; Linux only. */
  bootId?: string;
  /**
   * When the machine booted (ms since the epoch: the clock less the uptime); Windows only, which
   * has no boot id and hands out the same small pids again after every restart.
   */
  bootedAt?: number;
}

/** Two boot times further apart than this are two boots (the clock may be adjusted a little between reads). */
const BOOT_TIME_SLACK_MS = 60_000;
/** /proc is Linux's: Windows has none (and under Wine, Z:\proc would be the Linux host's). */
const onWindows = process.platform === 'win32';

export interface HeldLock {
  acquired: true;
  /** Set when a stale lock was taken over: which one and why, for the log. */
  takeover?: string;
  release(): void;
  /** Rewrites the lock with new public fields (the URL once the server listens). */
  update(lock: EngineLock): void;
  /**
   * Writes the lock again after the storage folder was removed and recreated: true when this
   * engine holds it (again), false when another engine took the folder meanwhile.
   */
  reestablish(lock: EngineLock): boolean;
}

/** `holder.pid` is 0 when the lock is being written and its owner is not known yet. */
export type LockResult = HeldLock | { acquired: false; holder: EngineLock };

type Verdict = { held: true; holder: EngineLock } | { held: false; why: string; ino: number } | { gone: true };

export function acquireLock(storageDir: string, startedAt: string): LockResult {
  const file = path.join(storageDir, LOCK_FILE);
  const identity = { processStart: processStartTime(process.pid), bootId: bootId(), bootedAt: bootedAt() };
  const mine = (lock: EngineLock): LockRecord => ({ ...lock, ...identity });
  const claimed = claim(file, mine({ pid: process.pid, url: '', startedAt }));
  if (!claimed.ok) return { acquired: false, holder: claimed.holder };
  return {
    acquired: true,
    takeover: claimed.takeover,
    update: (lock) => writeStorageFile(file, mine(lock)),
    reestablish: (lock) => {
      if (readLock(file)?.pid === process.pid) {
        writeStorageFile(file, mine(lock));
        return true;
      }
      return claim(file, mine(lock)).ok;
    },
    release: () => {
      const current = readLock(file);
      if (current?.pid === process.pid) rmSync(file, { force: true });
    },
  };
}

/** Creates the lock, taking over a stale one; or names the live engine that holds it. */
function claim(file: string, record: LockRecord): { ok: true; takeover?: string } | { ok: false; holder: EngineLock } {
  const takeovers: string[] = [];
  for (let tries = 0; tries < 5; tries++) {
    if (createExclusively(file, record)) return { ok: true, takeover: takeovers.length > 0 ? takeovers.join('; ') : undefined };
    const verdict = judge(file);
    if ('gone' in verdict) continue;
    if (verdict.held) return { ok: false, holder: verdict.holder };
    if (removeStale(file, verdict.ino)) takeovers.push(`took over ${file}: ${verdict.why}`);
  }
  throw new Error(`could not acquire ${file}: other engines keep taking it; start one engine at a time on a storage folder`);
}

/**
 * Writes the lock in full under a temporary name, then links it to the lock's name, which fails
 * if that exists: of two engines racing for the folder exactly one wins, and the lock file is
 * never seen empty or half written.
 */
function createExclusively(file: string, lock: LockRecord): boolean {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify(lock, null, 2) + '\n');
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw storageError('create', file, err);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Whether the lock file names a live engine, and if not, why it is stale. */
function judge(file: string): Verdict {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { gone: true };
    throw storageError('read', file, err);
  }
  let text: string;
  let stat;
  try {
    stat = fstatSync(fd);
    const buf = Buffer.alloc(Math.min(stat.size, 64 * 1024));
    text = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
  const lock = parseLock(text);
  if (!lock) {
    const ageMs = Date.now() - stat.mtimeMs;
    if (ageMs < UNREADABLE_LOCK_GRACE_MS) return { held: true, holder: { pid: 0, url: '', startedAt: '' } };
    return { held: false, why: `it was unreadable and ${Math.round(ageMs / 1000)} s old`, ino: stat.ino };
  }
  if (lock.pid === process.pid) return { held: false, why: 'it names this process', ino: stat.ino };
  const holder: EngineLock = { pid: lock.pid, url: lock.url, startedAt: lock.startedAt };
  if (!isAlive(lock.pid)) return { held: false, why: `its process ${lock.pid} is gone`, ino: stat.ino };
  // Locks from before these fields were recorded are judged by their pid alone.
  const boot = bootId();
  if (lock.bootId !== undefined && boot !== undefined && lock.bootId !== boot) {
    return { held: false, why: `it was written before the machine restarted (pid ${lock.pid} is now another process)`, ino: stat.ino };
  }
  const booted = bootedAt();
  if (lock.bootedAt !== undefined && booted !== undefined && Math.abs(lock.bootedAt - booted) > BOOT_TIME_SLACK_MS) {
    return { held: false, why: `it was written before the machine restarted (pid ${lock.pid} is now another process)`, ino: stat.ino };
  }
  const start = processStartTime(lock.pid);
  if (lock.processStart !== undefined && start !== undefined && lock.processStart !== start) {
    return { held: false, why: `pid ${lock.pid} now belongs to another process (started at tick ${start}, not ${lock.processStart})`, ino: stat.ino };
  }
  return { held: true, holder };
}

/**
 * Removes the stale lock judged above, and only that one: it is first moved aside, and if what was
 * moved is not the file judged (another engine took the lock over meanwhile), it is put back.
 */
function removeStale(file: string, ino: number): boolean {
  const aside = `${file}.${process.pid}.stale`;
  try {
    renameSync(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false; // someone else removed it first
    throw storageError('take over', file, err);
  }
  try {
    if (statSync(aside).ino === ino) return true;
    try {
      linkSync(aside, file);
    } catch {
      // A third engine created a lock in the moment it was aside: that one holds the folder now.
    }
    return false;
  } finally {
    rmSync(aside, { force: true });
  }
}

function parseLock(text: string): LockRecord | undefined {
  try {
    const lock = JSON.parse(text) as LockRecord;
    return typeof lock?.pid === 'number' && Number.isInteger(lock.pid) && lock.pid > 0 ? lock : undefined;
  } catch {
    return undefined;
  }
}

function readLock(file: string): LockRecord | undefined {
  try {
    return parseLock(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}


/** A process's start time in clock ticks since boot, from `/proc/<pid>/stat`; undefined elsewhere. */
export function processStartTime(pid: number): number | undefined {
  if (onWindows) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[22 - 3]);
    return Number.isSafeInteger(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

function bootId(): string | undefined {
  if (onWindows) return undefined;
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** When this machine booted, on Windows (see LockRecord.bootedAt); undefined elsewhere. */
function bootedAt(): number | undefined {
  return onWindows ? Math.round(Date.now() - os.uptime() * 1000) : undefined;
}

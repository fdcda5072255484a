// Signals to an attempt's process group. Each attempt is spawned as the leader of a group of its
// own, so one signal to the group reaches every process the attempt started, including the ones
// its command left running in the background. Windows has no process groups: endAttemptTree ends
// an attempt's processes on either (windowsTree.ts for Windows); the others are POSIX only.
import { endWindowsTree } from './windowsTree';

/**
 * Sends `signal` to every process of the group `pgid` (signal 0 only asks whether any exists).
 * False when it could not be delivered: ESRCH, the group is gone, is the usual reason and not an
 * error for any caller, so nothing is thrown.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** True while any process of the group `pgid` exists. */
export function groupAlive(pgid: number): boolean {
  return signalGroup(pgid, 0);
}

/** SIGTERM to the group now, then SIGKILL after `graceMs` if anything is left of it. */
export function endGroup(pgid: number, graceMs: number): void {
  if (!signalGroup(pgid, 'SIGTERM')) return;
  // unref: a reaper for leftovers must not keep the process that sent it alive.
  setTimeout(() => groupAlive(pgid) && signalGroup(pgid, 'SIGKILL'), graceMs).unref();
}

/**
 * Ends every process an attempt (or a hook, or a service) started, its first process being `pid`:
 * on POSIX the process group it leads (spawned `detached`), SIGTERM then SIGKILL after `graceMs`;
 * on Windows the process tree below it at once (Windows has no SIGTERM a program could handle:
 * Node ends a process there as SIGKILL does). Call it while that first process still runs: on
 * Windows the tree is found through it. Resolves once the tree is ended on Windows, at once on POSIX.
 */
export function endAttemptTree(pid: number, graceMs: number): Promise<void> {
  if (process.platform === 'win32') return endWindowsTree(pid);
  endGroup(pid, graceMs);
  return Promise.resolve();
}

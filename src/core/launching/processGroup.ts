// Signals to an attempt's process group. Each attempt is spawned as the leader of a group of its
// own, so one signal to the group reaches every process the attempt started, including the ones
// its command left running in the background. POSIX only: Windows has no process groups, so the
// callers check the platform first.

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

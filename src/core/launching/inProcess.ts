// Launching in the engine's own process: the fallback when no helper can run (or by choice), and
// the cleanup the engine does itself for an attempt whose helper died.
import { KILL_GRACE_MS, launchAttempt } from './attemptProcess';
import type { LeftoverSweeper } from './leftoverProcesses';
import { endGroup } from './processGroup';
import type { HelperAttempt } from './helperAttempt';
import type { AttemptLauncherOptions } from './options';

/** Spawns the attempt's process here; its pid and end become the attempt's. */
export function launchInProcess(a: HelperAttempt, options: AttemptLauncherOptions, sweeper: LeftoverSweeper): void {
  const run = launchAttempt(a.item, a.attempt, {
    marker: a.marker,
    workspaceFolders: options.workspaceFolders,
    sweeper,
    output: a.output,
    onOutputError: (error) => options.onOutputError?.(a.attemptId, error),
  });
  a.inProcess = run;
  a.pid = run.pid;
  void run.done.then((result) => a.finish(result));
}

/**
 * An attempt whose helper died: nobody reaps or times out its processes now. Its group is ended
 * by the pid the helper reported; what left the group is swept here, in the engine, by its marker
 * (rare enough that the /proc scan on this event loop does not matter).
 */
export function endOrphaned(a: HelperAttempt, sweeper: LeftoverSweeper): void {
  if (a.pid !== null) endAttemptGroup(a.pid);
  sweeper.ended(a.marker, a.pid, a.markedAt);
}

/** SIGTERM to the attempt's process group, SIGKILL after the usual grace if anything is left. */
function endAttemptGroup(pgid: number): void {
  if (process.platform !== 'win32') endGroup(pgid, KILL_GRACE_MS);
}

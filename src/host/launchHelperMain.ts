// The launch helper: a small, long-lived process the engine forks (src/core/launchHelper.ts) to
// spawn attempts on its behalf. child_process.spawn() blocks the calling thread while libuv forks
// and waits for the exec, and fork's cost grows with the parent's memory; the engine host holds
// 100–800 MB (sql.js, logs), this process a few tens, so each spawn is cheaper and none of it
// stalls the engine's event loop (docs/PERFORMANCE.md).
//
// It runs the same launchAttempt as in-process launching (process group per attempt, output tails,
// timeout SIGTERM → SIGKILL, leftover cleanup, ENGINE_* variables) and reports over IPC. When the
// engine goes away (IPC disconnect: it exited or was killed), every attempt's process group is
// ended, so no attempt outlives its engine.
//
// Bundled alone to dist/launch-helper.js: import nothing beyond the launcher.
import { groupAlive, KILL_GRACE_MS, launchAttempt, type RunningAttempt } from '../core/launcher';
import type { FromLaunchHelper, ToLaunchHelper } from '../core/launchProtocol';

/** Between SIGTERM and SIGKILL when the engine vanished: short, nobody waits for the outcome. */
const ORPHAN_GRACE_MS = 2000;

const runs = new Map<number, RunningAttempt>();
/**
 * Process groups that may still hold processes: running attempts, and finished ones for as long
 * as the launcher may still be reaping what they left behind.
 */
const groups = new Set<number>();
let ending = false;

function send(message: FromLaunchHelper): void {
  if (process.connected) process.send!(message);
}

function launch(attemptId: number, message: Extract<ToLaunchHelper, { type: 'launch' }>): void {
  if (ending || runs.has(attemptId)) return;
  const t0 = performance.now();
  const run = launchAttempt(message.item, message.attempt);
  const spawnMs = performance.now() - t0;
  runs.set(attemptId, run);
  if (run.pid !== null) groups.add(run.pid);
  send({ type: 'started', attemptId, pid: run.pid, spawnMs });
  void run.done.then((result) => {
    runs.delete(attemptId);
    send({ type: 'done', attemptId, result });
    if (result.pid !== null) {
      const pid = result.pid;
      setTimeout(() => groups.delete(pid), KILL_GRACE_MS + 1000).unref();
    }
  });
}

function signalGroups(signal: NodeJS.Signals): void {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, signal);
    } catch {
      groups.delete(pgid); // ESRCH: nothing left in it
    }
  }
}

/** SIGTERM every attempt's group, SIGKILL what is left after the grace, then exit. */
function endAll(graceMs: number): void {
  if (ending) return;
  ending = true;
  for (const run of runs.values()) run.terminate(graceMs);
  signalGroups('SIGTERM');
  const finish = () => {
    signalGroups('SIGKILL');
    process.exit(0);
  };
  // Leave as soon as everything is gone; the deadline holds the event loop open until then.
  const deadline = setTimeout(finish, graceMs);
  const poll = setInterval(() => {
    if (runs.size === 0 && [...groups].every((g) => !groupAlive(g))) {
      clearTimeout(deadline);
      clearInterval(poll);
      finish();
    }
  }, 25);
}

process.on('message', (message: ToLaunchHelper) => {
  switch (message.type) {
    case 'launch':
      launch(message.attemptId, message);
      break;
    case 'terminate':
      runs.get(message.attemptId)?.terminate(message.graceMs);
      break;
    case 'close':
      endAll(message.graceMs);
      break;
  }
});
// The engine is gone (exited, crashed, kill -9): its attempts must not outlive it.
process.on('disconnect', () => endAll(ORPHAN_GRACE_MS));
// Ctrl+C in a terminal reaches the engine and this helper alike (one process group); the engine
// decides what happens to running attempts (it waits for them during its shutdown grace).
process.on('SIGINT', () => undefined);
process.on('SIGHUP', () => undefined);
process.on('SIGTERM', () => endAll(ORPHAN_GRACE_MS));

if (!process.send) {
  process.stderr.write('launch-helper: started without an IPC channel; the engine forks this file\n');
  process.exit(2);
}
send({ type: 'ready', pid: process.pid });

// The launch helper: a small, long-lived process the engine forks (src/core/launching/) to
// spawn attempts on its behalf. The engine runs a pool of them (two by default), each on its own:
// none knows of the others, and each ends only the attempts it launched. child_process.spawn() blocks the calling thread while libuv forks
// and waits for the exec, and fork's cost grows with the parent's memory; the engine host holds
// 100–800 MB (sql.js, logs), this process a few tens, so each spawn is cheaper and none of it
// stalls the engine's event loop (docs/PERFORMANCE.md).
//
// It runs the same launchAttempt as in-process launching (process group per attempt, output tails,
// timeout SIGTERM → SIGKILL, leftover cleanup, ENGINE_* variables) and reports over IPC. Leftovers
// that left their attempt's group are swept here too, by their marker (src/core/leftoverProcesses.ts),
// so the /proc scans never run on the engine's event loop. When the engine goes away (IPC
// disconnect: it exited or was killed), every attempt's process group and every process still
// carrying an attempt's marker is ended, so no attempt outlives its engine.
//
// It also starts the engine's checkpoint processes (Store.snapshotInBackground), for the same
// reason: a fork from the engine host blocks its event loop for as long as the fork takes.
//
// It writes each attempt's output files too (src/core/outputCapture.ts): it reads the pipes anyway,
// and the engine's event loop never sees the bytes.
//
// Bundled alone to dist/launch-helper.js: import nothing beyond src/core/attemptProcess.ts and
// the small modules it uses (processGroup.ts, resourceSampler.ts, leftoverProcesses.ts, workingFolder.ts,
// outputCapture.ts, outputFiles.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { fixLaunchEnvironment, KILL_GRACE_MS, launchAttempt, leftoverSweeper, type RunningAttempt } from '../core/launching/attemptProcess';
import type { FromLaunchHelper, LaunchHelperPacket, ToLaunchHelper } from '../core/launching/protocol';
import { retireOutputPacks } from '../core/features/output/outputPacks';
import { groupAlive, signalGroup } from '../core/launching/processGroup';
import { resourceSampler } from '../core/launching/resourceSampler';

/** Between SIGTERM and SIGKILL when the engine vanished: short, nobody waits for the outcome. */
const ORPHAN_GRACE_MS = 2000;

const runs = new Map<number, RunningAttempt>();
/**
 * Process groups that may still hold processes: running attempts, and finished ones for as long
 * as launchAttempt may still be reaping what they left behind.
 */
const groups = new Set<number>();
let ending = false;
/** Checkpoint processes running for the engine (Store.snapshotInBackground). */
const checkpoints = new Map<number, ChildProcess>();

/**
 * How long a `started` may wait for company. The engine needs an attempt's pid only if this helper
 * dies while the attempt runs (to end its process group; its marker finds the processes anyway),
 * so it need not cost a packet of its own: most attempts of a burst end within this, and their
 * `started` rides with their `done`; a longer one's pid arrives this much later.
 */
const STARTED_DELAY_MS = 20;

/**
 * What this helper has to tell the engine, sent as one packet at the end of the turn of the event
 * loop (or, for `started` alone, after STARTED_DELAY_MS), in the order it was said: every packet
 * costs the engine's main thread a read, a parse and a wake-up of its event loop, about as much as
 * the rest of its work on a launch (docs/PERFORMANCE.md, the launch CPU target).
 */
let outbox: FromLaunchHelper[] = [];
let flushAtTurnEnd = false;
let flushTimer: NodeJS.Timeout | undefined;

/** `soon`: at the end of this turn; otherwise within STARTED_DELAY_MS, or with the next that is. */
function send(message: FromLaunchHelper, soon = true): void {
  outbox.push(message);
  if (soon) {
    if (!flushAtTurnEnd) {
      flushAtTurnEnd = true;
      setImmediate(sendOutbox);
    }
  } else if (!flushTimer) {
    flushTimer = setTimeout(sendOutbox, STARTED_DELAY_MS);
  }
}

function sendOutbox(): void {
  flushAtTurnEnd = false;
  clearTimeout(flushTimer);
  flushTimer = undefined;
  if (outbox.length === 0) return;
  const packet: LaunchHelperPacket<FromLaunchHelper> = outbox.length === 1 ? outbox[0] : outbox;
  outbox = [];
  // The callback matters: without one, a message to an engine that has just died (EPIPE) is thrown
  // as an 'error' event on process and kills this helper before its 'disconnect' handler below
  // ends the attempts it runs. The disconnect follows the failed write; that handler does the rest.
  if (process.connected) process.send!(packet, undefined, undefined, () => undefined);
}

function launch(attemptId: number, message: Extract<ToLaunchHelper, { type: 'launch' }>): void {
  if (ending || runs.has(attemptId)) return;
  const t0 = performance.now();
  const run = launchAttempt(message.item, message.attempt, {
    marker: message.marker,
    workspaceFolders: message.workspaceFolders,
    output: message.output,
    onOutputError: (error) => send({ type: 'output_error', attemptId, error }),
  });
  const spawnMs = performance.now() - t0;
  runs.set(attemptId, run);
  if (run.pid !== null) groups.add(run.pid);
  // A failed spawn's `done` follows in this turn and takes it along.
  send({ type: 'started', attemptId, pid: run.pid, spawnMs }, false);
  void run.done.then((result) => {
    runs.delete(attemptId);
    send({ type: 'done', attemptId, result });
    if (result.pid !== null) {
      const pid = result.pid;
      setTimeout(() => groups.delete(pid), KILL_GRACE_MS + 1000).unref();
    }
  });
}

/**
 * Starts a checkpoint process for the engine. Forking here costs this small process a few ms; the
 * same fork from the engine host, whose memory grows with its logs, stalls the engine's event loop
 * for longer (docs/PERFORMANCE.md). The process lowers its own priority (checkpointWorker.ts).
 */
function checkpoint(checkpointId: number, args: string[]): void {
  let answered = false;
  const answer = (pid: number | null, message: Extract<FromLaunchHelper, { type: 'checkpointed' }>['message']) => {
    if (answered) return;
    answered = true;
    checkpoints.delete(checkpointId);
    send({ type: 'checkpointed', checkpointId, pid, message });
  };
  if (ending) return answer(null, { ok: false, error: 'the launch helper is shutting down' });
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  } catch (err) {
    return answer(null, { ok: false, error: `cannot start the checkpoint process: ${(err as Error).message}` });
  }
  checkpoints.set(checkpointId, child);
  // Its CPU must not count as the next attempt's (resourceSampler.ts).
  child.once('exit', () => resourceSampler.otherChildExited());
  const pid = child.pid ?? null;
  child.once('message', (m) => answer(pid, m as Extract<FromLaunchHelper, { type: 'checkpointed' }>['message']));
  child.once('error', (err) => answer(pid, { ok: false, error: `the checkpoint process failed: ${err.message}` }));
  // 'close' comes after the IPC channel has delivered the process's answer, if it sent one.
  child.once('close', (code, signal) => answer(pid, { ok: false, error: `the checkpoint process ended (${signal ? `signal ${signal}` : `exit code ${code}`})` }));
}

function signalGroups(signal: NodeJS.Signals): void {
  for (const pgid of groups) {
    if (!signalGroup(pgid, signal)) groups.delete(pgid); // nothing left in it
  }
}

/** SIGTERM every attempt's group, SIGKILL what is left after the grace, then exit. */
function endAll(graceMs: number): void {
  if (ending) return;
  ending = true;
  // Nobody will install what a checkpoint builds now; its temporary file is removed at next start.
  for (const child of checkpoints.values()) child.kill('SIGKILL');
  for (const run of runs.values()) run.terminate(graceMs);
  signalGroups('SIGTERM');
  // And what left its group: whatever still carries one of our attempts' markers.
  leftoverSweeper.sweepAll('SIGTERM');
  const finish = () => {
    signalGroups('SIGKILL');
    leftoverSweeper.sweepAll('SIGKILL');
    // Its packs' own names (the attempts' links keep their output).
    retireOutputPacks();
    // What ended during the grace, told as it would have been before the exit.
    sendOutbox();
    process.exit(0);
  };
  // Leave as soon as everything is gone; the deadline holds the event loop open until then.
  const deadline = setTimeout(finish, graceMs);
  const poll = setInterval(() => {
    // The /proc scan only once the groups are gone: it is the costlier check.
    if (runs.size === 0 && [...groups].every((g) => !groupAlive(g)) && leftoverSweeper.sweep() === 0) {
      clearTimeout(deadline);
      clearInterval(poll);
      finish();
    }
  }, 25);
}

process.on('message', (packet: LaunchHelperPacket<ToLaunchHelper>) => {
  if (Array.isArray(packet)) for (const message of packet) receive(message);
  else receive(packet);
});

function receive(message: ToLaunchHelper): void {
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
    case 'checkpoint':
      checkpoint(message.checkpointId, message.args);
      break;
    case 'checkpoint_cancel':
      checkpoints.get(message.checkpointId)?.kill('SIGKILL');
      break;
    case 'ping':
      send({ type: 'pong' });
      break;
  }
}
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
// Every child of this process is an attempt's leader or a checkpoint process (reported as it exits).
resourceSampler.countReapedChildren();
// Nothing here changes this process's environment: attempts inherit one copy of it.
fixLaunchEnvironment();
send({ type: 'ready', pid: process.pid });

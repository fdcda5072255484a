// Launches one attempt of an item as an operating-system process and reports how it ended.
// The process gets its own process group so that a timeout (or the end of the attempt) reaches
// every process it started, not just the first one; and a marker in its environment, so that what
// leaves the group (setsid, setpgid) is still found and ended once the attempt is over
// (src/core/launching/leftoverProcesses.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import type { ItemDefinition } from '../intake/items';
import { ATTEMPT_MARKER_VARIABLE, LeftoverSweeper, newAttemptMarker } from './leftoverProcesses';
import { endAttemptTree, endGroup, signalGroup } from './processGroup';
import { workingFolderProblem } from '../intake/workingFolder';
import { BACKLOG_HIGH, OutputCapture } from '../features/output/outputCapture';
import type { OutputTarget } from '../features/output/outputFiles';
import type { AttemptResources } from '../../shared/api';
import { resourceSampler } from './resourceSampler';

/** How much of each output stream an attempt keeps: enough to see why it failed, bounded. */
export const OUTPUT_TAIL_BYTES = 4096;
/** After the process exits, the longest its pipes are read for output it left in them. */
const EXIT_DRAIN_MS = 2000;
/** Output after the exit is waited for until the pipes have been quiet this long (see watchProcess). */
const EXIT_QUIET_MS = 50;
/** Between SIGTERM and SIGKILL when an attempt times out: time for its command to clean up. */
export const KILL_GRACE_MS = 5000;

export interface AttemptResult {
  succeeded: boolean;
  exitCode: number | null;
  signal: string | null;
  /** Why the attempt failed beyond its exit status: 'timeout', a spawn error… */
  error: string | null;
  timedOut: boolean;
  startedAt: number;
  finishedAt: number;
  stdoutTail: string;
  stderrTail: string;
  pid: number | null;
  /** Size of the captured output as served (outputFiles.ts); null: not captured (never spawned, or capture off). */
  outputBytes: number | null;
  /** Why capturing stopped early (disk full…), else null. */
  outputError: string | null;
  /** What its processes cost (resourceSampler.ts); null: no process, or no /proc. */
  resources: AttemptResources | null;
  /** Spawn to first byte of output; null if it printed nothing. */
  firstOutputMs: number | null;
}

export interface RunningAttempt {
  /** null while a launch helper has not reported it yet (src/core/launchHelperClient.ts), or when the spawn failed. */
  readonly pid: number | null;
  readonly done: Promise<AttemptResult>;
  /** Ends the attempt early (engine shutdown): SIGTERM to the group, SIGKILL after the grace; on Windows its whole tree at once. */
  terminate(graceMs?: number): void;
}

const isWindows = process.platform === 'win32';

/**
 * Ends the leftovers of the attempts this process spawns: one per process, so that its sweeps
 * (at most one a second) cover every attempt at once.
 */
export const leftoverSweeper = new LeftoverSweeper({ graceMs: KILL_GRACE_MS });

export interface LaunchOptions {
  /** The attempt's marker (newAttemptMarker), when the caller needs to know it; else a new one. */
  marker?: string;
  /**
   * The engine's workspace folders: `cwd` must lead into the one it is spelled under, by real
   * path, when the process starts. Without them only its existence is checked.
   */
  workspaceFolders?: readonly string[];
  /** Who ends the attempt's leftovers; the process-wide one unless the caller keeps its own. */
  sweeper?: LeftoverSweeper;
  /** Where to capture the attempt's stdout and stderr; none: only the tails are kept. */
  output?: OutputTarget;
  /** Capturing failed (disk full…): said once, as soon as it happens; the attempt runs on. */
  onOutputError?: (error: string) => void;
  /**
   * How long output still in the pipes after the exit is waited for: `quietMs` without any, at
   * most `maxMs` in all (EXIT_QUIET_MS, EXIT_DRAIN_MS). The tests stretch them, so that waiting
   * when nothing is left to wait for shows as minutes, not as a few milliseconds a loaded machine
   * could also explain.
   */
  exitDrain?: { quietMs: number; maxMs: number };
}

/**
 * Spawns the attempt. The process sees ENGINE_ITEM_ID, ENGINE_ATTEMPT and ENGINE_MAX_ATTEMPTS,
 * so a command can tell a first try from a retry, and ENGINE_MONITOR_ATTEMPT, its marker.
 */
export function launchAttempt(item: ItemDefinition, attempt: number, options: LaunchOptions = {}): RunningAttempt {
  const startedAt = Date.now();
  // Checked before the spawn: Node reports a missing working folder as if the command were missing.
  const folderProblem = workingFolderProblem(item.cwd, options.workspaceFolders);
  if (folderProblem !== null) {
    return { pid: null, done: Promise.resolve(resultWithoutProcess(startedAt, folderProblem)), terminate: () => undefined };
  }
  const stdout = new TailBuffer(OUTPUT_TAIL_BYTES);
  const stderr = new TailBuffer(OUTPUT_TAIL_BYTES);
  const marker = options.marker ?? newAttemptMarker();
  const sweeper = options.sweeper ?? leftoverSweeper;
  sweeper.started(marker);
  const spawnedAt = performance.now();
  const { child, error: spawnError } = spawnAttempt(item, attempt, marker);
  const usage = child ? resourceSampler.track(child) : undefined;
  // Only for a process that exists: a spawn that failed (ENOENT…) has no output, not an empty one.
  const capture = child?.pid !== undefined && options.output ? new OutputCapture(options.output, options.onOutputError) : undefined;
  let timedOut = false;
  let killTimer: NodeJS.Timeout | undefined;
  let timeoutTimer: NodeJS.Timeout | undefined;
  const pid = child?.pid ?? null;

  // Windows: the tree being ended, which the attempt's end waits for.
  let endingTree: Promise<void> | undefined;
  const signalAttempt = (signal: NodeJS.Signals) => {
    if (pid !== null) signalGroup(pid, signal);
  };
  const terminate = (graceMs = KILL_GRACE_MS) => {
    if (isWindows) {
      // No signal a program could handle there: the whole tree is ended at once, whatever the grace.
      if (pid !== null) endingTree ??= endAttemptTree(pid, graceMs);
      return;
    }
    signalAttempt('SIGTERM');
    if (!killTimer) {
      killTimer = setTimeout(() => signalAttempt('SIGKILL'), graceMs);
      killTimer.unref();
    }
  };

  const done = new Promise<AttemptResult>((resolve) => {
    const finish = (exitCode: number | null, signal: string | null, error: string | null) => {
      clearTimeout(timeoutTimer);
      // Whatever the leader left behind in its group (daemonised grandchildren holding our pipes)
      // belongs to this attempt: end it too so attempts never leak processes.
      if (pid !== null && !isWindows) endGroup(pid, KILL_GRACE_MS);
      // And whatever left the group: found by the marker, shortly after. No pid, no process.
      if (pid !== null) sweeper.ended(marker, isWindows ? null : pid);
      else sweeper.forget(marker);
      clearTimeout(killTimer);
      child?.stdout?.destroy();
      child?.stderr?.destroy();
      const succeeded = exitCode === 0 && !timedOut && error === null;
      const captured = capture ? capture.close() : Promise.resolve({ bytes: null, error: null });
      const firstOutputAt = Math.min(stdout.firstAt, stderr.firstAt);
      // The attempt is reported once its output is on disk: a follower that learns of its end has
      // everything to read, and output_bytes is final. On Windows also once its tree is ended, so
      // that the engine's shutdown, which waits for its attempts, does not exit before it is.
      void Promise.all([captured, endingTree, resourceSampler.stop(usage)]).then(([end, , resources]) => resolve({
        succeeded,
        exitCode,
        signal,
        error: timedOut ? `timed out after ${item.timeoutMs} ms` : error,
        timedOut,
        startedAt,
        finishedAt: Date.now(),
        stdoutTail: stdout.text(),
        stderrTail: stderr.text(),
        pid,
        outputBytes: end.bytes,
        outputError: end.error,
        resources,
        firstOutputMs: firstOutputAt === Infinity ? null : Math.max(0, Math.round(firstOutputAt - spawnedAt)),
      }));
    };

    if (spawnError || !child) {
      queueMicrotask(() => finish(null, null, `spawn failed: ${spawnError?.message ?? 'unknown error'}`));
      return;
    }
    watchProcess(child, item, stdout, stderr, capture, finish, options.exitDrain ?? { quietMs: EXIT_QUIET_MS, maxMs: EXIT_DRAIN_MS });
    // 0: no limit (a service without timeoutMs runs until it exits or is stopped).
    if (item.timeoutMs > 0) {
      timeoutTimer = setTimeout(() => {
        timedOut = true;
        terminate();
      }, item.timeoutMs);
    }
  });

  return { pid, done, terminate };
}

/**
 * The environment attempts start from, once this process has said its own will not change (a
 * launch helper, fixLaunchEnvironment): a copy taken once, which each attempt's environment
 * inherits rather than copies. Reading process.env is a call into C++ per variable: copying it
 * cost ~30 µs a launch with a small environment, more with an editor's.
 */
let fixedEnvironment: NodeJS.ProcessEnv | undefined;

/** From now on, attempts start from process.env as it is now (the launch helper, whose environment never changes). */
export function fixLaunchEnvironment(): void {
  fixedEnvironment = { ...process.env };
}

function attemptEnvironment(item: ItemDefinition, attempt: number, marker: string): NodeJS.ProcessEnv {
  // child_process passes an environment's inherited variables on as well as its own (Node's own
  // tests hold it to that), so the fixed copy is the prototype, not copied again.
  const env: NodeJS.ProcessEnv = fixedEnvironment ? (Object.create(fixedEnvironment) as NodeJS.ProcessEnv) : { ...process.env };
  // Defined, not assigned: a variable an item calls __proto__ is a variable like any other.
  for (const name of Object.keys(item.env ?? {})) Object.defineProperty(env, name, { value: item.env[name], enumerable: true, writable: true, configurable: true });
  env.ENGINE_ITEM_ID = item.id;
  env.ENGINE_ATTEMPT = String(attempt);
  env.ENGINE_MAX_ATTEMPTS = String(item.maxAttempts);
  // Last, so an item's own env cannot take it away from its processes.
  env[ATTEMPT_MARKER_VARIABLE] = marker;
  return env;
}

function spawnAttempt(item: ItemDefinition, attempt: number, marker: string): { child?: ChildProcess; error?: Error } {
  try {
    const child = spawn(item.command, item.shell ? [] : item.args, {
      cwd: item.cwd,
      env: attemptEnvironment(item, attempt, marker),
      shell: item.shell,
      detached: !isWindows,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    return { child };
  } catch (err) {
    // spawn throws synchronously for some argument errors (e.g. a NUL byte in an argument).
    return { error: err as Error };
  }
}

/**
 * Collects the process's output and calls `finish` once: when it could not start, or when it has
 * exited and its pipes have delivered their last output.
 */
function watchProcess(
  child: ChildProcess,
  item: ItemDefinition,
  stdout: TailBuffer,
  stderr: TailBuffer,
  capture: OutputCapture | undefined,
  finish: (exitCode: number | null, signal: string | null, error: string | null) => void,
  exitDrain: { quietMs: number; maxMs: number },
): void {
  // Output is written as it arrives; when the disk falls behind, both pipes pause (the process
  // then blocks in its own writes) rather than this process buffering without bound.
  let paused = false;
  let onFlowing: (() => void) | undefined;
  const received = (tail: TailBuffer, stream: 'o' | 'e', chunk: Buffer) => {
    tail.push(chunk);
    onFlowing?.();
    if (!capture) return;
    capture.push(stream, chunk);
    if (!paused && capture.backlog >= BACKLOG_HIGH) {
      paused = true;
      child.stdout!.pause();
      child.stderr!.pause();
      capture.whenDrained(() => {
        paused = false;
        child.stdout!.resume();
        child.stderr!.resume();
        onFlowing?.();
      });
    }
  };
  child.stdout!.on('data', (chunk: Buffer) => received(stdout, 'o', chunk));
  child.stderr!.on('data', (chunk: Buffer) => received(stderr, 'e', chunk));
  // Counted from the start: the pipes often close before 'exit' is emitted (a quick command),
  // and a listener added only at 'exit' would then wait out the whole flush delay below.
  let openPipes = 2;
  let onPipesClosed: (() => void) | undefined;
  const onPipeClose = () => --openPipes === 0 && onPipesClosed?.();
  child.stdout!.once('close', onPipeClose);
  child.stderr!.once('close', onPipeClose);
  let settled = false;
  child.once('error', (err: NodeJS.ErrnoException) => {
    // 'error' without a pid means the process never started (ENOENT, EACCES…).
    if (settled || child.pid !== undefined) return;
    settled = true;
    const hint = err.code === 'ENOENT' ? ` (is "${item.command}" installed and on PATH?)` : '';
    finish(null, null, `spawn ${item.command} ${err.code ?? 'failed'}${hint}`);
  });
  child.once('exit', (code, signal) => {
    if (settled) return;
    settled = true;
    // Give the pipes a moment to deliver the last output; do not wait for grandchildren that
    // keep them open (the attempt ends when its process exits).
    let flushed = false;
    const flush = () => {
      if (flushed) return;
      flushed = true;
      onFlowing = undefined;
      finish(code, signal, null);
    };
    if (openPipes === 0) return flush();
    onPipesClosed = flush;
    // EXIT_QUIET_MS without output, not counting time the pipes were paused for the disk: what the
    // process printed just before it exited is still in the pipes then, and is kept. At most
    // EXIT_DRAIN_MS in all, so that a grandchild printing on through the pipes never holds the
    // attempt open (what the process itself left in the pipes, 64 KiB each, drains well within it).
    let quiet: NodeJS.Timeout | undefined;
    onFlowing = () => {
      clearTimeout(quiet);
      if (!paused) quiet = setTimeout(flush, exitDrain.quietMs).unref();
    };
    onFlowing();
    setTimeout(flush, exitDrain.maxMs).unref();
  });
}

/**
 * The result of an attempt that ended without a process of its own to report on: never spawned
 * (storage down, engine shutting down), cut short by a crash, or lost with its launch helper.
 */
export function resultWithoutProcess(startedAt: number, error: string): AttemptResult {
  return {
    succeeded: false,
    exitCode: null,
    signal: null,
    error,
    timedOut: false,
    startedAt,
    finishedAt: Date.now(),
    stdoutTail: '',
    stderrTail: '',
    pid: null,
    outputBytes: null,
    outputError: null,
    resources: null,
    firstOutputMs: null,
  };
}

/** Keeps the last `limit` bytes written to it, whatever arrives. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = false;
  /** performance.now() of its first byte; Infinity while none came. */
  firstAt = Infinity;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    if (this.firstAt === Infinity) this.firstAt = performance.now();
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size - this.chunks[0].length >= this.limit) {
      this.size -= this.chunks.shift()!.length;
      this.dropped = true;
    }
  }

  text(): string {
    let buf = Buffer.concat(this.chunks);
    if (buf.length > this.limit) {
      buf = buf.subarray(buf.length - this.limit);
      this.dropped = true;
    }
    const text = buf.toString('utf8');
    return this.dropped ? `…${text}` : text;
  }
}

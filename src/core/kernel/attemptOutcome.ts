// An attempt's result put into words and records: the reason a failure is kept as the item's last
// error, the details its log entries carry, and the end of its launch record. Recording the
// outcome (the item's new state, the counters, the log entries) is the engine's.
import type { AttemptResult } from '../launching/attemptProcess';
import type { ItemDefinition } from '../intake/items';
import type { LaunchEnd } from '../reads/records';

/** The process's own run time, which starts after the attempt was recorded. */
export function attemptDuration(result: AttemptResult): number {
  return result.finishedAt - result.startedAt;
}

/** Why an attempt failed, worded to follow "attempt 2 of 3": "exited with code 1", a spawn error… */
export function describeFailure(r: AttemptResult): string {
  if (r.timedOut) return r.error ?? 'timed out';
  if (r.error) return r.error;
  if (r.signal) return `was killed by signal ${r.signal}`;
  return `exited with code ${r.exitCode}`;
}

/** The details of the log entries about an attempt's outcome. */
export function outcomeDetails(item: ItemDefinition, attempt: number, result: AttemptResult): Record<string, unknown> {
  return {
    attempt,
    maxAttempts: item.maxAttempts,
    exitCode: result.exitCode,
    signal: result.signal,
    error: result.error,
    durationMs: attemptDuration(result),
    stdoutTail: result.stdoutTail,
    stderrTail: result.stderrTail,
  };
}

export function launchEnd(result: AttemptResult): LaunchEnd {
  return {
    outcome: result.succeeded ? 'succeeded' : 'failed',
    finishedAt: result.finishedAt,
    durationMs: attemptDuration(result),
    exitCode: result.exitCode,
    signal: result.signal,
    error: result.error,
  };
}

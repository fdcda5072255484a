// Where an item's own problem matcher runs: a regexp from a queue file is
// code the engine did not write, and JavaScript's regexps backtrack: `^(a+)+$` takes seconds on a
// line of 27 characters and centuries on one of 60. On the engine's main thread that froze every
// launch, /health and the API. So matchers with a queue file's regexps run on one worker thread,
// one attempt's output at a time, with a time budget: when it is spent the thread is terminated
// (a regexp cannot be interrupted any other way), the attempt gets no problems and the engine says
// why; the next attempt gets a fresh thread. The built-in matchers' regexps are ours, linear on
// the lines they get, and stay on the main thread.
import type { Worker } from 'node:worker_threads';
import type { AttemptProblem } from '../../../shared/api';
import type { ProblemMatcherInput } from './problemMatchers';
import { startWorker, workerCode } from '../../launching/workerCode';

/** How long one attempt's output may take to match, from the moment the thread starts on it. */
export const MATCH_TIME_BUDGET_MS = 5_000;
/** A thread with nothing to do is ended after this long: it holds a V8 isolate (a few MB). */
const IDLE_MS = 30_000;

export interface MatchJob {
  id: number;
  text: string;
  /** Problems to find; or, with `test`, none: whether the regexp `test` matches a line of `text` (a service's ready logPattern). */
  matcher: ProblemMatcherInput | null;
  test?: string;
  cwd: string;
}
/** The thread's first message: its code is loaded and it takes jobs. */
export type MatcherReady = { ready: true };

export type MatchAnswer = { id: number; problems: AttemptProblem[] } | { id: number; matched: boolean } | { id: number; error: string };

/** Whether `matcher` has a regexp from a queue file (anything but the built-ins' names). */
export function hasOwnRegexp(matcher: ProblemMatcherInput): boolean {
  return (Array.isArray(matcher) ? matcher : [matcher]).some((m) => typeof m !== 'string');
}

interface Pending extends MatchJob {
  resolve: (answer: AttemptProblem[] | boolean) => void;
  reject: (err: Error) => void;
}

export class MatcherThread {
  private worker: Worker | undefined;
  private online = false;
  private readonly queue: Pending[] = [];
  private current: { job: Pending; timer: NodeJS.Timeout | undefined } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private nextId = 1;
  private closed = false;

  constructor(private readonly budgetMs = MATCH_TIME_BUDGET_MS) {}

  /** The problems `matcher` finds in `text`; rejects when the budget is spent or the thread fails. */
  match(text: string, matcher: ProblemMatcherInput, cwd: string): Promise<AttemptProblem[]> {
    return this.run(text, matcher, undefined, cwd) as Promise<AttemptProblem[]>;
  }

  /** Whether `regexp` matches a line of `text`, under the same budget (a service's logPattern). */
  test(text: string, regexp: string): Promise<boolean> {
    return this.run(text, null, regexp, '') as Promise<boolean>;
  }

  private run(text: string, matcher: ProblemMatcherInput | null, test: string | undefined, cwd: string): Promise<AttemptProblem[] | boolean> {
    if (this.closed) return Promise.reject(new Error('the engine is shutting down'));
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, text, matcher, ...(test !== undefined ? { test } : {}), cwd, resolve, reject });
      this.pump();
    });
  }

  /** Ends the thread; matches not finished are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const error = new Error('the engine is shutting down');
    for (const job of this.queue.splice(0)) job.reject(error);
    this.finishCurrent()?.reject(error);
    await this.endWorker();
  }

  private pump(): void {
    if (this.current || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    clearTimeout(this.idleTimer);
    this.current = { job, timer: undefined };
    const worker = this.ensureWorker();
    worker.postMessage({ id: job.id, text: job.text, matcher: job.matcher, ...(job.test !== undefined ? { test: job.test } : {}), cwd: job.cwd } satisfies MatchJob);
    // The budget counts from when the thread can run it (its code loaded): starting a thread on a
    // loaded machine is not the regexp's fault.
    if (this.online) this.startBudget();
  }

  private startBudget(): void {
    const current = this.current;
    if (!current || current.timer) return;
    current.timer = setTimeout(() => {
      if (this.current !== current) return;
      this.finishCurrent();
      void this.endWorker();
      current.job.reject(
        new Error(
          `it ran for more than ${this.budgetMs / 1000} s on the attempt's output and was stopped; a regexp with nested repetition (like "(a+)+") can backtrack without end: make the repeated parts exclusive (for example "[^:]+" rather than ".+" before a ":")`,
        ),
      );
      this.pump();
    }, this.budgetMs);
  }

  private finishCurrent(): Pending | undefined {
    const current = this.current;
    if (!current) return undefined;
    clearTimeout(current.timer);
    this.current = undefined;
    return current.job;
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    // dist/matcher-worker.js beside the bundle, or matcherWorker.ts through tsx (unit tests).
    const worker = startWorker(workerCode(__dirname, 'matcher-worker.js', 'matcherWorker.ts'), { resourceLimits: { maxYoungGenerationSizeMb: 4 } });
    // Never what keeps the engine's process alive; a match under way holds its budget timer.
    worker.unref();
    this.worker = worker;
    this.online = false;
    worker.on('message', (answer: MatchAnswer | MatcherReady) => {
      if (this.worker !== worker) return;
      if ('ready' in answer) {
        this.online = true;
        this.startBudget();
        return;
      }
      if (this.current?.job.id !== answer.id) return;
      const job = this.finishCurrent()!;
      if ('error' in answer) job.reject(new Error(answer.error));
      else job.resolve('matched' in answer ? answer.matched : answer.problems);
      this.afterJob();
    });
    const lost = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.finishCurrent()?.reject(new Error(`the matcher thread ${why}`));
      this.afterJob();
    };
    worker.on('error', (err) => lost(`failed: ${err.message}`));
    worker.on('exit', (code) => lost(`exited with code ${code}`));
    return worker;
  }

  private afterJob(): void {
    this.pump();
    if (this.current || this.closed || !this.worker) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => void this.endWorker(), IDLE_MS);
    this.idleTimer.unref();
  }

  private async endWorker(): Promise<void> {
    clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.worker = undefined;
    this.online = false;
    if (worker) await worker.terminate();
  }
}

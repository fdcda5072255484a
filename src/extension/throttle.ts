// Coalesced refreshes: many triggers in a burst become one run, at most one run in flight, and at
// most one run per interval (GitLens merges pending node refreshes in the same spirit). This is
// what keeps a busy engine's event stream from turning into a storm of HTTP requests.
import type * as vscode from 'vscode';

export class Throttled implements vscode.Disposable {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private again = false;
  private lastRun = 0;
  private disposed = false;

  constructor(
    private readonly run: () => Promise<void>,
    private readonly intervalMs: number,
  ) {}

  /** Ask for a run; `now` skips the interval wait (e.g. right after connecting). */
  trigger(now = false): void {
    if (this.disposed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer && !now) return;
    clearTimeout(this.timer);
    const wait = now ? 0 : Math.max(0, this.lastRun + this.intervalMs - Date.now());
    this.timer = setTimeout(() => void this.fire(), wait);
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    this.running = true;
    this.again = false;
    this.lastRun = Date.now();
    try {
      await this.run();
    } catch {
      // run() reports its own errors; a failure must not stop later runs
    } finally {
      this.running = false;
      if (this.again) this.trigger();
    }
  }

  dispose(): void {
    this.disposed = true;
    clearTimeout(this.timer);
  }
}

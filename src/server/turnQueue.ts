// Answers queued responses one per event-loop turn: how /logs and /items pages are served.
import type { ServerResponse } from 'node:http';
import type { NextFunction } from 'express';

/**
 * Runs queued responses one per event-loop turn (setImmediate), in arrival order. Between two of
 * them the loop runs its timers and reads new requests, so its delay stays about one page long
 * however many clients wait. A response whose client has gone is skipped; an error thrown goes
 * to the router's error handler, as a synchronous one would.
 */
export class TurnQueue {
  private readonly jobs: { res: ServerResponse; next: NextFunction; answer: () => void }[] = [];
  private scheduled = false;

  run(res: ServerResponse, next: NextFunction, answer: () => void): void {
    this.jobs.push({ res, next, answer });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.turn);
    }
  }

  private readonly turn = (): void => {
    const job = this.jobs.shift();
    if (job && !job.res.destroyed) {
      try {
        job.answer();
      } catch (error) {
        job.next(error);
      }
    }
    if (this.jobs.length > 0) setImmediate(this.turn);
    else this.scheduled = false;
  };
}

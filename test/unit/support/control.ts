// What the control tests (control.test.ts, control.cancel.test.ts) share.
import assert from 'node:assert/strict';
import type { StatsOverview } from '../../../src/shared/api';

/** Every relation /stats promises at every instant (without retries by hand). */
export function assertControlInvariants(s: StatsOverview): void {
  const where = JSON.stringify(s);
  assert.equal(s.total, s.launched + s.pending + s.failed, `total in ${where}`);
  assert.ok(s.held <= s.pending, `held ≤ pending in ${where}`);
  assert.ok(s.running <= s.pending, `running ≤ pending in ${where}`);
  assert.equal(s.totalLaunches, s.launched + s.totalFailed + s.running, `totalLaunches in ${where}`);
}

/** A `sleep` whose argument no other process on the machine has, so ps finds exactly it. */
export function uniqueSleep(): string {
  return `300.${process.pid}${Math.floor(Math.random() * 1e6)}`;
}

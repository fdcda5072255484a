// Notices when the wall clock jumps (set by hand, a VM resumed, NTP stepping it) against the
// monotonic clock. Delays the engine chose itself (a retry's backoff) are kept as wall-clock due
// times, because they survive a restart and /items shows them; after a jump they would be hours
// off, so the engine moves them by the jump. Times a user gave (runAt) stay where they are.
export class WallClockWatch {
  /** Date.now() - performance.now() when last looked at. */
  private offset = Date.now() - performance.now();

  /**
   * How far the wall clock jumped since the last call (ms; negative: back), or 0. Below
   * `thresholdMs` it is drift or rounding, not a jump, and is absorbed silently.
   */
  jumped(thresholdMs = 1000): number {
    const offset = Date.now() - performance.now();
    const jump = offset - this.offset;
    if (Math.abs(jump) < thresholdMs) return 0;
    this.offset = offset;
    return Math.round(jump);
  }
}

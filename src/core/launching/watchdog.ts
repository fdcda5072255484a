// A helper enforces its own attempts' timeouts, so one that stops answering (SIGSTOP, a hang)
// would let them run forever: it is pinged every second, and one silent for UNRESPONSIVE_MS is
// killed with SIGKILL, then handled as a dead helper.
import type { Helper } from './helperProcess';
import { post } from './outbox';

/** How often a ready helper is asked whether it is still there. */
const PING_INTERVAL_MS = 1000;
/**
 * A helper silent this long while this engine's event loop kept running is stopped or hung. Long
 * enough for a burst of launches it works through in order (each spawn blocks it a few ms) on a
 * loaded machine; short enough that a 1 s timeout is not outlived by much.
 */
const UNRESPONSIVE_MS = 5000;

/** Pings the ready helper `h` every second and kills it once it has been silent for UNRESPONSIVE_MS; `killed` says so first. */
export function watchHelper(h: Helper, killed: (silentMs: number) => void): void {
  let lastTick = performance.now();
  h.watchdog = setInterval(() => {
    const now = performance.now();
    // This engine's own event loop stalled: the helper's answers may be waiting unread, so the
    // silence is counted again from now.
    if (now - lastTick > 2 * PING_INTERVAL_MS) h.lastHeardAt = now;
    lastTick = now;
    if (h.closing || !h.child.connected) return;
    const silentMs = now - h.lastHeardAt;
    if (silentMs < UNRESPONSIVE_MS) {
      post(h, { type: 'ping' });
      return;
    }
    clearInterval(h.watchdog);
    h.killedBecause = `killed after it did not answer for ${Math.round(silentMs / 1000)} s`;
    killed(silentMs);
    h.child.kill('SIGKILL');
  }, PING_INTERVAL_MS);
  // The watchdog must not keep an engine alive that has nothing else to do.
  h.watchdog.unref();
}

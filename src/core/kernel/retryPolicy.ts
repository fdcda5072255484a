// When a failed attempt is tried again.

export interface BackoffOptions {
  /** The first retry's nominal delay; 1 s unless a test shortens it. */
  backoffBaseMs?: number;
  /** The longest nominal delay; 60 s by default. */
  backoffMaxMs?: number;
}

/**
 * min(base × 2^(attempt−1), max) ± 20 % jitter: exponential so an item that keeps failing costs
 * less and less, capped so it is still retried regularly, and jittered so items that failed
 * together do not all come back in the same instant.
 */
export function backoffDelay(failedAttempt: number, options: BackoffOptions): number {
  const base = options.backoffBaseMs ?? 1000;
  const max = options.backoffMaxMs ?? 60_000;
  const nominal = Math.min(base * 2 ** (failedAttempt - 1), max);
  return Math.round(nominal * (0.8 + Math.random() * 0.4));
}

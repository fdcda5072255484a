// Small helpers shared by the benchmark runner and its child processes.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

export function median(values: number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

export interface LoopDelay {
  /** Milliseconds; each sample includes the monitor's 1 ms tick. */
  p50: number;
  p99: number;
  max: number;
  mean: number;
  samples: number;
}

/** Event-loop delay of this process (perf_hooks.monitorEventLoopDelay, 1 ms resolution). */
export class LoopMonitor {
  private h: IntervalHistogram = monitorEventLoopDelay({ resolution: 1 });
  constructor() {
    this.h.enable();
  }
  reset(): void {
    this.h.reset();
  }
  read(): LoopDelay {
    const ms = (ns: number) => Math.round((ns / 1e6) * 100) / 100;
    return {
      p50: ms(this.h.percentile(50)),
      p99: ms(this.h.percentile(99)),
      max: ms(this.h.max),
      mean: ms(this.h.mean),
      samples: this.h.count,
    };
  }
}

/** Wraps a store's snapshot() to record how long each one blocks the event loop. */
export function timeSnapshots(store: { snapshot(): boolean }): number[] {
  const durations: number[] = [];
  const original = store.snapshot.bind(store);
  store.snapshot = () => {
    const t = performance.now();
    try {
      return original();
    } finally {
      durations.push(Math.round((performance.now() - t) * 10) / 10);
    }
  };
  return durations;
}

export function mb(bytes: number): number {
  return Math.round((bytes / 1024 / 1024) * 10) / 10;
}

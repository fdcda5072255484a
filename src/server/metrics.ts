// GET /metrics: the engine's counters in Prometheus's text exposition format 0.0.4, written by
// prom-client.
//
// Nothing here counts anything itself. The item and launch figures are read from engine.stats()
// and engine.health() once per scrape, the same calls /stats and /health answer from, so a scrape
// and a /stats read at the same instant agree, and the `_total` counters keep growing across
// restarts because the engine persists them. The one thing only this file keeps is the attempt
// histograms (duration, peak memory, CPU), fed by the engine's onAttemptFinished; like any Prometheus histogram
// it starts from zero with the process (PromQL's rate() and increase() take the reset in stride).
//
// Cost: a scrape reads counters in memory and no database row, whatever the database's size:
// about 0.5 ms of CPU (2,000 scrapes/s on the 2-core bench machine, `BENCH_ONLY=api npm run
// bench`), nearly all of it prom-client's process metrics (the event-loop delay histogram's
// stddev and percentiles, reading /proc/self); the engine's own metrics take about 10 µs.
import type { Router } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { HealthSnapshot, MonitoredEngine } from '../core/kernel/monitoredEngine';
import type { HealthStatus, StatsOverview } from '../shared/api';
import { parseParams, queryStringOf } from './params';

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** Attempts last from a few milliseconds (a failed spawn) to hours (a timeout set high): 10 ms to 1 h. */
export const ATTEMPT_DURATION_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** Peak resident memory of an attempt's processes: 1 MiB to 16 GiB, by powers of 4. */
export const ATTEMPT_PEAK_RSS_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384].map((mib) => mib * 1024 * 1024);
/** CPU time of an attempt's processes: 10 ms to 1 h, as the durations. */
export const ATTEMPT_CPU_BUCKETS = ATTEMPT_DURATION_BUCKETS;

const HEALTH_STATUSES: readonly HealthStatus[] = ['healthy', 'degraded', 'unhealthy'];
const OUTCOMES = ['launched', 'pending', 'failed'] as const;

/**
 * prom-client's gauges named `*_total` (a counter's suffix: `promtool check metrics` refuses them).
 * Dropped rather than renamed: summing the per-type gauge beside each (`sum(nodejs_active_handles)`)
 * gives the same figure.
 */
const MISNAMED_DEFAULT_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

let processRegistry: Registry | undefined;

/**
 * The process's own metrics (CPU, memory, event-loop delay, GC, handles), in one registry for the
 * whole process rather than one per server: they describe the process, and each collection starts
 * an event-loop delay monitor and a GC observer that prom-client never stops, so one per server
 * would pile up in a process that starts many (the tests). Never prom-client's global registry.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    for (const name of MISNAMED_DEFAULT_GAUGES) processRegistry.removeSingleMetric(name);
  }
  return processRegistry;
}

export interface EngineMetrics {
  /** The whole exposition: the engine's metrics, then the process's. */
  scrape(): Promise<string>;
  /** Stops listening to the engine (the server is closing). */
  close(): void;
}

/** The metrics of one server's engine, in a registry of its own (a process may run several servers). */
export function createEngineMetrics(engine: MonitoredEngine): EngineMetrics {
  const registry = new Registry();
  const registers = [registry];
  // Now rather than at the first scrape, so the event-loop delay monitor has data by then.
  const ofProcess = processMetrics();
  // Read once at the start of each scrape; every collect callback reads this one snapshot, so the
  // figures of one exposition belong to one instant (pending + launched + failed = total, and so on).
  let stats: StatsOverview = engine.stats();
  let health: HealthSnapshot = engine.health();

  new Gauge({
    name: 'engine_monitor_items',
    help: 'Known items by outcome (as /stats): pending includes the held and the running ones.',
    labelNames: ['outcome'],
    registers,
    collect() {
      for (const outcome of OUTCOMES) this.set({ outcome }, stats[outcome]);
    },
  });
  new Counter({
    name: 'engine_monitor_launches_total',
    help: 'Attempts ever started (totalLaunches in /stats; kept across restarts).',
    registers,
    collect() {
      this.reset();
      this.inc(stats.totalLaunches);
    },
  });
  new Counter({
    name: 'engine_monitor_launch_failures_total',
    help: 'Attempts ever failed, cancelled ones included (totalFailed in /stats; kept across restarts).',
    registers,
    collect() {
      this.reset();
      this.inc(stats.totalFailed);
    },
  });
  new Gauge({
    name: 'engine_monitor_running',
    help: 'Pending items with an attempt running now (running in /stats).',
    registers,
    collect() {
      this.set(stats.running);
    },
  });
  new Gauge({
    name: 'engine_monitor_services',
    help: 'Services (items with service: true) by state: starting, ready, or stopped (not running).',
    labelNames: ['state'],
    registers,
    collect() {
      const counts = engine.serviceCounts?.() ?? { starting: 0, ready: 0, stopped: 0 };
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
  new Gauge({
    name: 'engine_monitor_held',
    help: 'Pending items held by the user, not launched until released (held in /stats).',
    registers,
    collect() {
      this.set(stats.held);
    },
  });
  new Gauge({
    name: 'engine_monitor_health_status',
    help: 'The engine health as /health reports it: 1 for the current status, 0 for the others.',
    labelNames: ['status'],
    registers,
    collect() {
      for (const status of HEALTH_STATUSES) this.set({ status }, status === health.status ? 1 : 0);
    },
  });
  new Gauge({
    name: 'engine_monitor_last_poll_timestamp_seconds',
    help: 'Start of the last poll of the sources, in seconds since the Unix epoch; 0 if the database was never polled.',
    registers,
    collect() {
      this.set(stats.lastPollAt === null ? 0 : Date.parse(stats.lastPollAt) / 1000);
    },
  });
  const durations = new Histogram({
    name: 'engine_monitor_attempt_duration_seconds',
    help: 'How long attempts ran, observed when each gets its outcome (succeeded or failed), since this engine process started.',
    buckets: ATTEMPT_DURATION_BUCKETS,
    registers,
  });

  // An attempt's cost, where it was measured (resourceSampler.ts): one that was not (too short to
  // sample, no /proc, a cancel recorded before its process ended) is left out, not counted as 0.
  const peakRss = new Histogram({
    name: 'engine_monitor_attempt_peak_rss_bytes',
    help: 'Peak resident memory of each attempt\'s process group (sampled every 250 ms at most), observed at its outcome, since this engine process started.',
    buckets: ATTEMPT_PEAK_RSS_BUCKETS,
    registers,
  });
  const cpu = new Histogram({
    name: 'engine_monitor_attempt_cpu_seconds',
    help: 'CPU time (user + system) of each attempt\'s process group, observed at its outcome, since this engine process started.',
    buckets: ATTEMPT_CPU_BUCKETS,
    registers,
  });

  const unsubscribe = engine.onAttemptFinished((attempt) => {
    durations.observe(Math.max(0, attempt.durationMs) / 1000);
    const peak = attempt.resources?.peakRssBytes;
    if (typeof peak === 'number') peakRss.observe(peak);
    const cpuMs = attempt.resources?.cpuMs;
    if (typeof cpuMs === 'number') cpu.observe(cpuMs / 1000);
  });

  return {
    async scrape() {
      stats = engine.stats();
      health = engine.health();
      const [own, processText] = await Promise.all([registry.metrics(), ofProcess.metrics()]);
      return own + processText;
    },
    close: unsubscribe,
  };
}

/** GET (and HEAD) /metrics; the protection middleware ran before it, as for every path. */
export function addMetricsRoute(app: Router, metrics: EngineMetrics): void {
  app.get('/metrics', async (req: IncomingMessage, res: ServerResponse) => {
    const query = queryStringOf(req.url);
    if (query !== '') parseParams(query, []);
    const text = await metrics.scrape();
    res.writeHead(200, {
      'Content-Type': METRICS_CONTENT_TYPE,
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(text);
  });
}

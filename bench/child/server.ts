// Child: the process under load in scenario 1. Either the real engine host (startEngineHost on a
// seeded storage folder: engine + Express API, persistence on) or the baseline, a bare node:http
// server answering a fixed body. The runner (which drives autocannon) talks to it over IPC, so the
// load generator never shares this event loop.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Store } from '../../src/core/store';
import { startEngineHost } from '../../src/host/engineHost';
import { checkpointInFlight, LoopMonitor, memoryBreakdown, timeSnapshots, watchWasmMemory } from '../lib';

// Before anything loads sql.js: the breakdown reports the size of its WebAssembly memory.
watchWasmMemory();

interface Config {
  mode: 'engine' | 'bare';
  storageDir?: string;
  workspace?: string;
  /** bare: the body to answer with (same size as /stats). */
  body?: string;
  logMaxEntries?: number;
  snapshotIntervalMs?: number;
}

const config = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as Config;
const send = (m: unknown) => process.send!(m);

async function main(): Promise<void> {
  let url: string;
  let snapshots: number[] = [];
  const workerMs: number[] = [];
  let store: Store | undefined;
  const t0 = performance.now();
  if (config.mode === 'bare') {
    const body = config.body ?? '{}';
    const headers = {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    };
    const server = createServer((_req, res) => {
      res.writeHead(200, headers);
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  } else {
    const started = await startEngineHost({
      workspaceFolders: [config.workspace!],
      storageDir: config.storageDir!,
      queueDirectory: '.engine/queue',
      pollIntervalMs: 2000,
      concurrency: 4,
      maxAttempts: 3,
      timeoutMs: 600_000,
      // Scenario 1 holds 1,000,000 entries: retention must not prune them while we measure.
      logMaxEntries: config.logMaxEntries ?? 100_000,
      logMaxAgeDays: 14,
      initialMode: 'stopped',
      version: '0.0.0-bench',
      snapshotIntervalMs: config.snapshotIntervalMs,
      host: '127.0.0.1',
      port: 0,
    });
    if (started.kind !== 'running') throw new Error('storage folder is locked by another engine');
    url = started.host.url;
    // As `engine-monitor serve` does once ready (serve first lets a window's first reads go by):
    // the helpers also build the snapshots measured here.
    started.host.engine.prepareLaunching();
    store = (started.host.engine as unknown as { store: typeof store }).store;
    snapshots = timeSnapshots(store!, workerMs);
  }
  const startupMs = performance.now() - t0;
  const loop = new LoopMonitor(() => checkpointInFlight(store));
  let cpu = process.cpuUsage();
  process.on('message', (m: { type: string; phase?: string }) => {
    switch (m.type) {
      case 'phase':
        loop.phase = m.phase ?? '?';
        send({ type: 'phase' });
        break;
      case 'reset':
        loop.reset();
        snapshots.length = 0;
        workerMs.length = 0;
        cpu = process.cpuUsage();
        send({ type: 'reset' });
        break;
      case 'report': {
        const c = process.cpuUsage(cpu);
        send({
          type: 'report',
          loop: loop.read(),
          rss: process.memoryUsage().rss,
          maxRss: process.resourceUsage().maxRSS * 1024,
          heapUsed: process.memoryUsage().heapUsed,
          breakdown: memoryBreakdown(),
          cpuMs: (c.user + c.system) / 1000,
          snapshots: [...snapshots],
          workerMs: [...workerMs],
        });
        break;
      }
      case 'snapshot': {
        // A snapshot exactly as the engine's persist timer takes one: built by the checkpoint
        // worker; `mainMs` is what the event loop paid for it (starting it and installing it).
        if (!store) {
          send({ type: 'snapshot', ok: true, ms: 0, mainMs: 0 });
          break;
        }
        store.setMeta('bench_marker', String(Date.now()));
        const before = snapshots.length;
        const started = store.snapshotInBackground();
        void store.whenCheckpointed().then((ok) => {
          const info = store.lastSnapshot;
          send({
            type: 'snapshot',
            ok: started && ok,
            background: info?.background ?? false,
            builtIn: info?.builtIn ?? null,
            builderPeakRss: info?.builderPeakRss ?? null,
            ms: info?.ms ?? 0,
            mainMs: snapshots.slice(before).reduce((a, b) => a + b, 0),
            bytes: info?.bytes ?? 0,
          });
        });
        break;
      }
      case 'gc':
        // Under --expose-gc only (exploration): what of the heap is live.
        (globalThis as { gc?: () => void }).gc?.();
        send({ type: 'gc' });
        break;
      case 'exit':
        process.exit(0);
    }
  });
  send({ type: 'ready', url, startupMs });
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});

// Child: the process under load in scenario 1. Either the real engine host (startEngineHost on a
// seeded storage folder: engine + Express API, persistence on) or the baseline, a bare node:http
// server answering a fixed body. The runner (which drives autocannon) talks to it over IPC, so the
// load generator never shares this event loop.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startEngineHost } from '../../src/host/engineHost';
import { LoopMonitor, timeSnapshots } from '../lib';

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
  let store: { snapshot(): boolean; setMeta(k: string, v: string): void } | undefined;
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
    store = (started.host.engine as unknown as { store: typeof store }).store;
    snapshots = timeSnapshots(store!);
  }
  const startupMs = performance.now() - t0;
  const loop = new LoopMonitor();
  let cpu = process.cpuUsage();
  process.on('message', (m: { type: string }) => {
    switch (m.type) {
      case 'reset':
        loop.reset();
        snapshots.length = 0;
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
          cpuMs: (c.user + c.system) / 1000,
          snapshots: [...snapshots],
        });
        break;
      }
      case 'snapshot': {
        // A snapshot exactly as the engine's persist timer takes one.
        store?.setMeta('bench_marker', String(Date.now()));
        const ok = store ? store.snapshot() : true;
        send({ type: 'snapshot', ok, ms: snapshots[snapshots.length - 1] ?? 0 });
        break;
      }
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

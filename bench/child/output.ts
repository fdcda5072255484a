// Child: the output scenario's engine under a flood. A persisted engine with its HTTP server; the
// parent measures /stats from its own process, first idle, then while one attempt prints 100 MB as
// fast as it can (on 'flood'), and this child reports when the attempt ended, how long it took,
// and the launch helper's peak RSS meanwhile.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import type { AttemptLauncher } from '../../src/core/launching';
import { locateLaunchHelper } from '../../src/host/launchHelperEntry';
import { startHttpServer } from '../../src/server/server';
import { benchEngineOptions, benchLaunchHelper, floodScript, LoopMonitor } from '../lib';

interface Config {
  root: string;
  floodMB: number;
  /** The per-attempt output cap (the engine's default when absent). */
  outputMaxBytes?: number;
}

const config = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as Config;

async function main(): Promise<void> {
  rmSync(config.root, { recursive: true, force: true });
  const ws = path.join(config.root, 'ws');
  const queue = path.join(ws, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  const enqueue = (name: string, item: unknown) => {
    const file = path.join(queue, name);
    writeFileSync(`${file}.tmp`, JSON.stringify(item));
    renameSync(`${file}.tmp`, file);
  };
  // One attempt first, so the launch helper is up before the idle measurement.
  enqueue('warmup.json', { id: 'warmup', command: process.execPath, args: ['-e', '0'] });
  const engine = await Engine.create(
    benchEngineOptions(config.root, {
      pollIntervalMs: 100,
      // One slot for the flood (or, for the idle figure, a sleeping attempt), four for the launches.
      concurrency: 5,
      timeoutMs: 120_000,
      launchHelper: benchLaunchHelper('output', locateLaunchHelper),
      outputMaxBytes: config.outputMaxBytes,
    }),
  );
  await engine.start();
  const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
  const launcher = (engine as unknown as { launcher: AttemptLauncher }).launcher;
  const finished = (id: string) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (engine.listItems({ limit: 1000, offset: 0 }).items.some((i) => i.id === id && i.outcome !== 'pending')) {
          unsubscribe();
          resolve();
        }
      };
      const unsubscribe = engine.subscribe((e) => void (e.type === 'stats' && check()));
      check();
    });
  /** Resolves once every item in `ids` has launched. One listener, one query per burst of events, so what it costs the engine stays out of the figure. */
  const allFinished = (ids: Set<string>) =>
    new Promise<void>((resolve) => {
      let queued = false;
      const check = () => {
        queued = false;
        // The batch is the newest launched items once it is done (none fails: /bin/true).
        const launched = engine.stats().launched;
        const newest = engine.listItems({ filter: { outcome: 'launched' }, limit: ids.size + 2, offset: Math.max(0, launched - ids.size - 2) }).items;
        if (newest.filter((i) => ids.has(i.id)).length === ids.size) {
          unsubscribe();
          resolve();
        }
      };
      const unsubscribe = engine.subscribe((e) => {
        if (e.type !== 'stats' || queued) return;
        queued = true;
        setImmediate(check);
      });
      setImmediate(check);
    });
  await finished('warmup');
  process.send!({ type: 'ready', url: server.url });

  process.on('message', (m: { type: string }) => {
    if (m.type === 'flood') {
      void (async () => {
        const loop = new LoopMonitor();
        loop.phase = 'flood';
        // The pool's helpers together: the flood runs in one of them.
        const helperPids = launcher.helperPids;
        const helpersRss = () => helperPids.reduce((sum, pid) => sum + rssOf(pid), 0);
        const rss0 = helpersRss();
        let peak = rss0;
        const sampler = setInterval(() => (peak = Math.max(peak, helpersRss())), 20);
        const t0 = performance.now();
        enqueue('flood.json', {
          id: 'flood',
          command: process.execPath,
          args: ['-e', floodScript(config.floodMB)],
        });
        await finished('flood');
        const ms = performance.now() - t0;
        clearInterval(sampler);
        // The attempt itself, spawn to its output on disk: without the poll that found it.
        const attemptMs = engine.itemDetail('flood')?.attempts[0]?.durationMs ?? null;
        process.send!({ type: 'flooded', ms, attemptMs, helperRssBefore: rss0, helperRssPeak: peak, loop: loop.read() });
      })();
    } else if (m.type === 'launch') {
      // A batch of /bin/true items next to a busy slot: the flood, or (flood: false) an attempt
      // that only sleeps, so both figures have the same four slots free.
      void (async () => {
        const { n, flood, batch } = m as unknown as { n: number; flood: boolean; batch: string };
        const busy = `${batch}-busy`;
        enqueue(`${busy}.json`, flood
          ? { id: busy, command: process.execPath, args: ['-e', floodScript(config.floodMB)] }
          : { id: busy, command: process.execPath, args: ['-e', 'setTimeout(() => {}, 1500)'] });
        // The busy attempt starts first: the batch is enqueued once it runs.
        await new Promise<void>((resolve) => {
          const check = () => {
            if (engine.stats().running > 0) {
              unsubscribe();
              resolve();
            }
          };
          const unsubscribe = engine.subscribe((e) => void (e.type === 'stats' && check()));
          check();
        });
        const t0 = performance.now();
        const items = Array.from({ length: n }, (_, i) => ({ id: `${batch}-${i}`, command: '/bin/true' }));
        const file = path.join(queue, `${batch}.json`);
        writeFileSync(`${file}.tmp`, JSON.stringify(items));
        renameSync(`${file}.tmp`, file);
        void engine.pollNow();
        await allFinished(new Set(items.map((i) => i.id)));
        const ms = performance.now() - t0;
        await finished(busy);
        process.send!({ type: 'launched', ms });
      })();
    } else if (m.type === 'exit') {
      void (async () => {
        await server.close();
        await engine.shutdown(1000);
        rmSync(config.root, { recursive: true, force: true });
        process.exit(0);
      })();
    }
  });
}

function rssOf(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});

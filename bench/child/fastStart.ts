// Child: the fast-start scenario. An idle engine at the default poll interval (persistence on, its
// HTTP server up with a token) is given one item at a time, by a queue file renamed into its
// folder or by POST /items, and each sample is the time from the rename (or the request) to the
// child's first instruction. The item's command is `/bin/sh -c 'echo ID > FIFO'`: the shell's echo
// into a named pipe this process reads is the first thing the launched program does, so the
// sample ends when this loop reads the line (the shell's own start, well under a millisecond,
// is inside every sample). Beside it, in the same process and the same run, the bare Node
// spawner's sample: child_process.spawn() of the same command, detached, until the line arrives.
// The three kinds take turns, and samples follow one another with an idle gap, so each meets an
// engine that has nothing to do and a poll timer somewhere in its 2 s.
import { spawn, spawnSync } from 'node:child_process';
import { constants, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { Socket } from 'node:net';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { startHttpServer } from '../../src/server/server';
import { benchEngineOptions, benchLaunchHelper } from '../lib';
import { locateLaunchHelper } from '../../src/host/launchHelperEntry';
import { SETTINGS } from '../../src/shared/settings';

interface Config {
  root: string;
  samples: number;
  /** Discarded samples first (the launch helper's first spawns, cold caches). */
  warmup: number;
  gapMs: number;
}

const config = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as Config;
const TOKEN = 'bench-fast-start';

/** Lines the launched shells write into the FIFO, each resolved the moment this loop reads it. */
class Arrivals {
  private readonly waiting = new Map<string, (at: number) => void>();
  private buffer = '';

  constructor(fifo: string) {
    // Read and write: opening never blocks, and the pipe never reads end-of-file between writers.
    const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    const socket = new Socket({ fd, readable: true, writable: false });
    socket.on('data', (chunk: Buffer) => {
      const at = performance.now();
      this.buffer += chunk.toString();
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const id = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        this.waiting.get(id)?.(at);
        this.waiting.delete(id);
      }
    });
    socket.unref();
  }

  next(id: string): Promise<number> {
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  rmSync(config.root, { recursive: true, force: true });
  const ws = path.join(config.root, 'ws');
  const queue = path.join(ws, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  const fifo = path.join(config.root, 'arrivals.fifo');
  if (spawnSync('mkfifo', [fifo]).status !== 0) throw new Error('mkfifo failed');
  const arrivals = new Arrivals(fifo);
  const shell = (id: string) => ({ command: '/bin/sh', args: ['-c', 'echo "$1" > "$0"', fifo, id] });

  const pollIntervalMs = SETTINGS['engine.pollIntervalMs'].default;
  const engine = await Engine.create(
    benchEngineOptions(config.root, {
      pollIntervalMs,
      concurrency: 4,
      launchHelper: benchLaunchHelper('fast-start', locateLaunchHelper),
    }),
  );
  await engine.start();
  const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0, token: TOKEN });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const port = new URL(server.url).port;
  /**
   * Wall-clock ms from `t0` to the item's launch_started entry: the attempt recorded (scan or
   * request, then the claim), before the journal's fdatasync, the launch helper and the spawn.
   */
  const recordedAfter = (id: string, t0: number): number => {
    const entry = engine.queryLogs({ order: 'desc', limit: 1, itemId: id, actions: ['launch_started'] }).entries[0];
    return entry ? Date.parse(entry.timestamp) - t0 : NaN;
  };
  const recorded = { rename: [] as number[], post: [] as number[] };
  const idle = async (id: string) => {
    while (engine.itemDetail(id)?.outcome === 'pending' || engine.status().engine.running > 0) await sleep(2);
  };

  // One sample of each kind in turn, so that all three meet the same load on a shared machine.
  const bare: number[] = [];
  const fromRename: number[] = [];
  const fromPost: number[] = [];
  for (let i = 0; i < config.warmup + config.samples; i++) {
    const keep = i >= config.warmup;
    // The floor: Node's own spawn() of the same command, from this process.
    {
      const id = `bare-${i}`;
      const arrived = arrivals.next(id);
      const t0 = performance.now();
      const { command, args } = shell(id);
      const child = spawn(command, args, { stdio: 'ignore', detached: true });
      const ms = (await arrived) - t0;
      await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(null)));
      if (keep) bare.push(ms);
      await sleep(config.gapMs);
    }
    {
      const id = `rename-${i}`;
      const file = path.join(queue, `${id}.json`);
      writeFileSync(`${file}.tmp`, JSON.stringify({ id, ...shell(id) }));
      const arrived = arrivals.next(id);
      const wall = Date.now();
      const t0 = performance.now();
      renameSync(`${file}.tmp`, file);
      const ms = (await arrived) - t0;
      if (keep) fromRename.push(ms);
      if (keep) recorded.rename.push(recordedAfter(id, wall));
      await idle(id);
      await sleep(config.gapMs);
    }
    {
      const id = `post-${i}`;
      const body = JSON.stringify({ id, ...shell(id) });
      const arrived = arrivals.next(id);
      const wall = Date.now();
      const t0 = performance.now();
      const answered = new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/items', method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, 'content-length': Buffer.byteLength(body) } },
          (res) => {
            res.resume();
            res.on('end', () => (res.statusCode === 201 ? resolve(performance.now()) : reject(new Error(`POST /items answered ${res.statusCode}`))));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      const [at] = await Promise.all([arrived, answered]);
      if (keep) fromPost.push(at - t0);
      if (keep) recorded.post.push(recordedAfter(id, wall));
      await idle(id);
      await sleep(config.gapMs);
    }
  }

  const launcher = (engine as unknown as { launcher: { mode: string } }).launcher.mode;
  agent.destroy();
  await server.close();
  await engine.shutdown(1000);
  process.stdout.write(`${JSON.stringify({ bare, fromRename, fromPost, recorded, pollIntervalMs, launcher })}\n`);
  rmSync(config.root, { recursive: true, force: true });
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});

// Child: the output scenario's engine serving finely interleaved output. A persisted engine with
// its HTTP server and one finished attempt whose output is `runs` one-byte runs alternating stdout
// ('o') and stderr ('e'); the parent GETs it from its own process, combined, one stream, and as
// runs. The attempt is real (the engine launched it and recorded it); its output files are written
// through OutputCapture, the writer the launch helper uses, rather than by the program through
// pipes: a program alternating writeSync(1, 'o') and writeSync(2, 'e') a byte at a time reached a
// Node.js reader of its pipes coalesced (500,000 bytes as about 102,000 runs, at load average 3),
// and how much depends on how fast the reader keeps up, so the figure would move with the load;
// written this way it is exactly `runs` runs every time.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { OutputCapture } from '../../src/core/features/output/outputCapture';
import { DEFAULT_OUTPUT_MAX_BYTES } from '../../src/core/features/output/outputFiles';
import { closeLayout, outputView, readLayout } from '../../src/core/features/output/outputReader';
import { locateLaunchHelper } from '../../src/host/launchHelperEntry';
import { startHttpServer } from '../../src/server/server';
import { benchEngineOptions, benchLaunchHelper } from '../lib';

interface Config {
  root: string;
  runs: number;
}

export interface OutputReadsReady {
  type: 'ready';
  url: string;
  /** The attempt's output path under the server, without a query. */
  path: string;
  /** Runs in the files as the reader sees them (both streams), and of stdout alone. */
  runs: number;
  stdoutRuns: number;
  bytes: number;
}

const config = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as Config;
const ITEM = 'interleaved';

async function main(): Promise<void> {
  rmSync(config.root, { recursive: true, force: true });
  const ws = path.join(config.root, 'ws');
  const queue = path.join(ws, '.engine', 'queue');
  mkdirSync(queue, { recursive: true });
  // It prints nothing: its output files are written below.
  writeFileSync(path.join(queue, 'item.json.tmp'), JSON.stringify({ id: ITEM, command: '/bin/true' }));
  renameSync(path.join(queue, 'item.json.tmp'), path.join(queue, 'item.json'));
  const engine = await Engine.create(
    benchEngineOptions(config.root, {
      pollIntervalMs: 100,
      launchHelper: benchLaunchHelper('outputReads', locateLaunchHelper),
    }),
  );
  await engine.start();
  const server = await startHttpServer(engine, { host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => {
    const check = () => {
      if (engine.listItems({ limit: 10, offset: 0 }).items.some((i) => i.id === ITEM && i.outcome !== 'pending')) {
        unsubscribe();
        resolve();
      }
    };
    const unsubscribe = engine.subscribe((e) => void (e.type === 'stats' && check()));
    check();
  });
  const output = engine.attemptOutput(ITEM, 1);
  if (output.found !== 'output') throw new Error(`the attempt of ${ITEM} has no output record (${output.found})`);

  const capture = new OutputCapture({ dir: output.dir, attemptId: output.attemptId, maxBytes: DEFAULT_OUTPUT_MAX_BYTES });
  const o = Buffer.from('o');
  const e = Buffer.from('e');
  for (let i = 0; i < config.runs; i++) capture.push(i % 2 === 0 ? 'o' : 'e', i % 2 === 0 ? o : e);
  const end = await capture.close();
  if (end.error !== null || end.bytes === null) throw new Error(`writing the interleaved output failed: ${end.error ?? 'nothing written'}`);

  // The runs as the server's reader finds them, so the figure says how many pieces it served.
  const layout = await readLayout(output.dir, output.attemptId);
  if (!layout) throw new Error('the interleaved output was written, yet the reader finds none');
  let runs: number;
  let stdoutRuns: number;
  try {
    runs = (await outputView(layout, 'all')).pieces.length;
    stdoutRuns = (await outputView(layout, 'stdout')).pieces.length;
  } finally {
    await closeLayout(layout);
  }
  const ready: OutputReadsReady = { type: 'ready', url: server.url, path: `/items/${ITEM}/attempts/1/output`, runs, stdoutRuns, bytes: end.bytes };
  process.send!(ready);

  process.on('message', (m: { type: string }) => {
    if (m.type !== 'exit') return;
    void (async () => {
      await server.close();
      await engine.shutdown(1000);
      rmSync(config.root, { recursive: true, force: true });
      process.exit(0);
    })();
  });
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});

// Part of `npm run bench` scenario `output`: serving finely interleaved output over the HTTP API.
// An attempt whose program alternated stdout and stderr a byte at a time has one run per byte; one
// stream of it (`?stream=stdout`) and its runs (`?format=runs`, what the editor's Show Output
// reads) are hundreds of thousands of pieces, while the combined output is the same bytes as a
// few big ones: the baseline, GET from the same engine in the same run.
import { fork } from 'node:child_process';
import path from 'node:path';
import { BUILD, CFG, TMP } from './config';
import { execArgv } from './children';
import { add, fmt, log, raw } from './results';
import { median } from './lib';
import type { OutputReadsReady } from './child/outputReads';

type Read = 'combined' | 'stdout' | 'runs';
const QUERY: Record<Read, string> = { combined: '', stdout: '?stream=stdout', runs: '?format=runs' };
/** Reads of the combined output per run (see below). */
const COMBINED_READS = 5;

export async function interleavedReads(): Promise<void> {
  const n = CFG.interleavedRuns;
  const child = fork(path.join(BUILD, 'outputReads.js'), [], {
    env: { ...process.env, BENCH_CONFIG: JSON.stringify({ root: path.join(TMP, 'output-reads'), runs: n }) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: execArgv('outputReads', true),
  });
  const ready = await new Promise<OutputReadsReady>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the outputReads child exited with ${code} before it was ready`)));
    child.on('message', (m: { type: string }) => m.type === 'ready' && resolve(m as OutputReadsReady));
  });
  child.removeAllListeners('exit');
  log(`  interleaved output: ${fmt(ready.bytes)} bytes in ${fmt(ready.runs)} runs as the reader finds them (${fmt(ready.stdoutRuns)} of stdout)`);
  if (ready.runs < n) log(`  warning: ${n} runs were written, the reader finds ${ready.runs}`);
  const stdoutBytes = Math.ceil(n / 2);
  /** One GET, timed to its last byte; its body checked, so a fast wrong answer cannot pass for a fast one. */
  const get = async (read: Read): Promise<number> => {
    const t0 = performance.now();
    const res = await fetch(`${ready.url}${ready.path}${QUERY[read]}`);
    const body = Buffer.from(await res.arrayBuffer());
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`GET ${ready.path}${QUERY[read]}: ${res.status} ${body.toString().slice(0, 300)}`);
    const wrong =
      read === 'combined'
        ? body.length !== ready.bytes
        : read === 'stdout'
          ? body.length !== stdoutBytes || body.includes('e')
          : // Every run a header line and its one byte.
            body.length !== ready.runs * 'stdout 1\no'.length || !body.subarray(0, 20).equals(Buffer.from('stdout 1\nostderr 1\ne'));
    if (wrong) throw new Error(`GET ${ready.path}${QUERY[read]} answered ${body.length} bytes not as expected: ${JSON.stringify(body.subarray(0, 40).toString())}…`);
    return ms;
  };
  const ms: Record<Read, number[]> = { combined: [], stdout: [], runs: [] };
  try {
    // The server's paths warmed once on the cheap read.
    await get('combined');
    for (let r = 0; r < CFG.outputRuns; r++) {
      // The baseline is a few milliseconds, where one descheduling on a loaded machine is as much
      // again: it is read several times a run, and the median of all those is the baseline.
      const combined: number[] = [];
      for (let k = 0; k < COMBINED_READS; k++) combined.push(await get('combined'));
      ms.combined.push(...combined);
      for (const read of ['stdout', 'runs'] as const) ms[read].push(await get(read));
      log(`  run ${r + 1}, GET interleaved output: combined ${fmt(median(combined))} ms (median of ${COMBINED_READS}), stdout ${fmt(ms.stdout[r])} ms, runs ${fmt(ms.runs[r])} ms`);
    }
  } finally {
    child.send({ type: 'exit' });
    await new Promise((resolve) => child.once('exit', resolve));
  }
  raw['output interleaved reads'] = { runs: ready.runs, stdoutRuns: ready.stdoutRuns, bytes: ready.bytes, ms };
  const combined = median(ms.combined);
  const note =
    `${fmt(ready.runs)} runs (written through OutputCapture, one byte each, alternating); baseline: GET of the same attempt's combined output (${fmt(ready.bytes)} bytes in a few big pieces), median of ${COMBINED_READS} reads a run; ` +
    'target ratio ≤ 3 is our choice: a filtered read may cost a few times the plain one, not a cost per run';
  for (const read of ['stdout', 'runs'] as const) {
    const value = median(ms[read]);
    add({
      scenario: 'output',
      measure: `GET ${read === 'stdout' ? 'one stream (?stream=stdout)' : 'runs (?format=runs)'} of ${fmt(n)} finely interleaved runs, vs the combined output`,
      value,
      unit: 'ms',
      baseline: combined,
      ratio: value / combined,
      target: 'ratio ≤ 3',
      met: value / combined <= 3,
      note,
    });
  }
}

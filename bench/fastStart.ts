// `npm run bench` scenario `faststart`: from a rename or a POST /items to the launched program's
// first instruction, on an idle engine at the default poll interval, against a bare Node spawner.
import path from 'node:path';
import { CFG, TMP } from './config';
import { runChild } from './children';
import { add, fmt, log, raw } from './results';
import { percentile } from './lib';

export async function scenarioFastStart(): Promise<void> {
  log('\n== scenario: fast start (an idle engine at the default poll interval)');
  const r = await runChild<{ bare: number[]; fromRename: number[]; fromPost: number[]; recorded: { rename: number[]; post: number[] }; pollIntervalMs: number; launcher: string }>('fastStart', {
    root: path.join(TMP, 'fast-start'),
    samples: CFG.fastStartSamples,
    warmup: 5,
    gapMs: 30,
  });
  raw.fastStart = r;
  const n = r.bare.length;
  for (const p of [50, 99]) {
    const bare = percentile(r.bare, p);
    add({ scenario: 'faststart', measure: `bare Node spawner: spawn() to the program's first instruction, p${p}`, value: bare, unit: 'ms', note: `${n} samples` });
    for (const [label, samples, recorded] of [['a queue file renamed in', r.fromRename, r.recorded.rename], ['POST /items', r.fromPost, r.recorded.post]] as const) {
      const v = percentile(samples, p);
      add({
        scenario: 'faststart',
        measure: `${label} to the program's first instruction, p${p} (poll interval ${r.pollIntervalMs} ms)`,
        value: v,
        unit: 'ms',
        baseline: bare,
        ratio: v / bare,
        ...(p === 99 ? { target: '≤ 50 ms', met: v <= 50 } : {}),
        note: `${samples.length} samples, max ${fmt(Math.max(...samples))} ms; the attempt recorded (launch_started) after ${fmt(percentile(recorded, p))} ms at p${p} (whole ms); launcher: ${r.launcher}`,
      });
    }
  }
}

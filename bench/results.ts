// The benchmark's table: the rows every scenario adds, the raw figures kept for the JSON, progress
// lines on stderr, and the rows and notes more than one scenario writes the same way.
import { STALL_MS, type LoopDelay, type Row } from './lib';

export const rows: Row[] = [];
export const raw: Record<string, unknown> = {};
export const add = (r: Row) => {
  rows.push(r);
  const v = fmt(r.value);
  log(`  ${r.measure}: ${v} ${r.unit}${r.baseline !== undefined ? ` (baseline ${fmt(r.baseline)}, ratio ${fmt(r.ratio!)})` : ''}${r.target ? ` target ${r.target}: ${r.met ? 'met' : 'MISSED'}` : ''}`);
};

export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

export function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

export function loopRows(scenario: string, label: string, loop: LoopDelay, snapshots: number[], workerMs: number[] = []): void {
  add({ scenario, measure: `${label}: event-loop delay p99`, value: loop.p99, unit: 'ms', target: '≤ 20 ms', met: loop.p99 <= 20 });
  add({
    scenario,
    measure: `${label}: event-loop delay max`,
    value: loop.max,
    unit: 'ms',
    target: '≤ 100 ms',
    met: loop.max <= 100,
    note:
      `${workerMs.length} background snapshot(s) in the window` +
      (workerMs.length ? ` (worker ${Math.min(...workerMs)}–${Math.max(...workerMs)} ms each)` : '') +
      (snapshots.length ? `; longest main-thread part ${Math.max(...snapshots)} ms` : '') +
      stallNote(loop),
  });
  for (const s of loop.stalls ?? []) log(`    stall ${s.ms} ms during ${s.phase}${s.checkpoint ? ', while a checkpoint was being built' : ''}`);
}

/** "process <pid>" → "process": which kind of builder, without the pid. */
export function builtInKind(builtIn: string | null): string {
  return builtIn === null ? 'main thread' : builtIn.replace(/ \d+$/, '');
}

/** How many stalls over STALL_MS the window had, and how many of them came while a checkpoint ran. */
function stallNote(loop: LoopDelay): string {
  const stalls = loop.stalls ?? [];
  if (stalls.length === 0) return `; no stall over ${STALL_MS} ms`;
  const during = stalls.filter((s) => s.checkpoint).length;
  return `; ${stalls.length}${stalls.length === 20 ? '+' : ''} stall(s) over ${STALL_MS} ms, ${during} while a checkpoint was being built, longest ${stalls[0].ms} ms during ${stalls[0].phase}`;
}

export function table(): string {
  const head = ['scenario', 'measure', 'value', 'baseline', 'ratio', 'target', 'result'];
  const body = rows.map((r) => [
    r.scenario,
    r.measure,
    `${fmt(r.value)} ${r.unit}`,
    r.baseline === undefined ? '' : `${fmt(r.baseline)}${r.unit === 'req/s' || r.unit === 'ms' ? ` ${r.unit}` : ''}`,
    r.ratio === undefined ? '' : `${fmt(r.ratio)}×`,
    r.target ?? '',
    r.met === undefined ? (r.note ?? '') : `${r.met ? 'met' : 'MISSED'}${r.note ? `; ${r.note}` : ''}`,
  ]);
  const lines = [head, ...body].map((cells) => `| ${cells.join(' | ')} |`);
  lines.splice(1, 0, `|${head.map(() => '---').join('|')}|`);
  return lines.join('\n');
}

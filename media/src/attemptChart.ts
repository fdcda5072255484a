// The item detail's history: the durations and the peak memory of its last 50 finished attempts,
// two hand-drawn SVG bar rows over the same attempts, slow ones marked; a table with the same
// figures (CPU and first output too) for screen readers and for the exact numbers. Every engine
// string is text.
import type { AttemptDetail, ItemDetail } from '../../src/shared/api';
import { formatMemory, formatResources } from '../../src/shared/format';
import { h, replaceChildren, svg } from './dom';
import { formatDuration } from './format';

export const CHART_ATTEMPTS = 50;
const ROW_H = 70;
const LEFT = 84;
const RIGHT = 8;
const PAD = 6;

interface Row {
  label: string;
  value: (a: AttemptDetail) => number | null;
  format: (v: number) => string;
  cls: string;
}

const ROWS: Row[] = [
  { label: 'Duration', value: (a) => a.durationMs, format: formatDuration, cls: 'duration' },
  { label: 'Peak memory', value: (a) => a.resources?.peakRssBytes ?? null, format: formatMemory, cls: 'memory' },
];

export class AttemptChart {
  readonly element: HTMLElement;
  private readonly plot = h('div', { class: 'chart-plot attempt-chart-plot' });
  private readonly summary = h('p', { class: 'chart-summary' });
  private readonly table = h('div', { class: 'visually-hidden' });
  private width = 480;
  private attempts: AttemptDetail[] = [];

  constructor() {
    this.element = h('div', { class: 'chart attempt-chart' }, this.plot, this.summary, this.table);
    new ResizeObserver(() => {
      const w = Math.floor(this.plot.clientWidth);
      if (w > 0 && w !== this.width) {
        this.width = w;
        this.draw();
      }
    }).observe(this.plot);
  }

  render(d: ItemDetail): void {
    this.attempts = d.attempts.filter((a) => a.finishedAt !== null).slice(-CHART_ATTEMPTS);
    const slow = this.attempts.filter((a) => a.slow).length;
    const { count, medianMs, p90Ms } = d.durations ?? { count: 0, medianMs: null, p90Ms: null };
    replaceChildren(
      this.summary,
      count === 0
        ? 'No finished attempt yet.'
        : `Median ${formatDuration(medianMs ?? 0)}, 90th percentile ${formatDuration(p90Ms ?? 0)} over the last ${count} attempt${count === 1 ? '' : 's'}` +
            (slow ? `; ${slow} slow (more than twice the median of the 10 before it).` : '.'),
    );
    this.summary.dataset.slow = String(slow);
    this.draw();
    this.drawTable();
  }

  private draw(): void {
    const list = this.attempts;
    if (list.length === 0) {
      replaceChildren(this.plot);
      return;
    }
    const W = Math.max(this.width, 240);
    const H = ROWS.length * ROW_H;
    const slot = (W - LEFT - RIGHT) / CHART_ATTEMPTS;
    const barW = Math.max(1, slot * 0.7);
    const parts: SVGElement[] = [];
    ROWS.forEach((row, r) => {
      const top = r * ROW_H + PAD;
      const plotH = ROW_H - 2 * PAD - 10;
      const values = list.map(row.value);
      const max = Math.max(1, ...values.map((v) => v ?? 0));
      const y = (v: number) => top + plotH - (v / max) * plotH;
      parts.push(
        svg('text', { class: 'axis', x: LEFT - 6, y: top + 8, 'text-anchor': 'end' }, row.format(max)),
        svg('text', { class: 'axis row-label', x: LEFT - 6, y: top + plotH, 'text-anchor': 'end' }, row.label),
        svg('line', { class: 'baseline', x1: LEFT, x2: W - RIGHT, y1: y(0), y2: y(0) }),
      );
      list.forEach((a, i) => {
        const v = values[i];
        const x = LEFT + i * slot + (slot - barW) / 2;
        const label = `Attempt ${a.attempt} (${a.outcome}${a.slow ? ', slow' : ''}): ${row.label.toLowerCase()} ${v === null ? 'not measured' : row.format(v)}`;
        const g = svg('g', { class: `bar ${row.cls}${a.slow ? ' slow' : ''} outcome-${a.outcome}`, 'data-attempt': a.attempt }, svg('title', {}, label));
        g.appendChild(svg('rect', { class: 'hit', x: LEFT + i * slot, y: top, width: slot, height: plotH }));
        if (v !== null) g.appendChild(svg('rect', { class: 'value', x, y: y(v), width: barW, height: Math.max(1, y(0) - y(v)) }));
        // A slow attempt: a mark above its bar, in both rows, so it is found in either.
        if (a.slow) g.appendChild(svg('circle', { class: 'slow-mark', cx: x + barW / 2, cy: Math.max(top + 3, y(v ?? 0) - 5), r: 3 }));
        parts.push(g);
      });
    });
    const chart = svg(
      'svg',
      { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `Durations and peak memory of the last ${list.length} attempts. ${this.summary.textContent ?? ''}` },
      ...parts,
    );
    replaceChildren(this.plot, chart);
  }

  private drawTable(): void {
    const rows = this.attempts.map((a) =>
      h(
        'tr',
        { 'data-attempt': a.attempt },
        h('td', {}, String(a.attempt)),
        h('td', {}, a.durationMs === null ? '—' : formatDuration(a.durationMs)),
        h('td', {}, formatResources(a.resources)),
        h('td', {}, a.firstOutputMs === null ? 'none' : formatDuration(a.firstOutputMs)),
        h('td', {}, a.slow ? 'slow' : ''),
      ),
    );
    replaceChildren(
      this.table,
      h(
        'table',
        { class: 'attempt-history' },
        h('caption', {}, 'What each attempt took and cost'),
        h('thead', {}, h('tr', {}, ...['#', 'Duration', 'Resources', 'First output', 'Slow'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, ...rows),
      ),
    );
  }
}

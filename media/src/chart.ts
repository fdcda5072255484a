// Launch attempts and failures per minute over the last hour, as a hand-drawn SVG bar chart.
// Counts come from a /logs read when the dashboard loads and grow with live `log` events.
import type { LogEntry } from '../../src/shared/api';
import type { LaunchTimeline } from '../../src/shared/webviewProtocol';
import { h, replaceChildren, svg } from './dom';

const MINUTE = 60_000;
export const WINDOW_MINUTES = 60;
const STARTED = new Set(['launch_started']);
const FAILED = new Set(['launch_failed', 'launch_interrupted']);

interface Bucket {
  started: number;
  failed: number;
}

export class LaunchChart {
  readonly element: HTMLElement;
  private readonly plot: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly buckets = new Map<number, Bucket>();
  /** Live events up to this id are already in the counts; undefined while loading. */
  private lastId: number | undefined;
  private readonly buffered: LogEntry[] = [];
  private renderedMinute = 0;
  private width = 600;

  constructor() {
    this.summary = h('p', { class: 'chart-summary' });
    this.plot = h('div', { class: 'chart-plot' });
    this.element = h('div', { class: 'chart' }, this.plot, this.summary);
    new ResizeObserver(() => {
      const w = Math.floor(this.plot.clientWidth);
      if (w > 0 && w !== this.width) {
        this.width = w;
        this.render();
      }
    }).observe(this.plot);
    // Move the window along as minutes pass, even when nothing happens.
    setInterval(() => {
      if (Math.floor(Date.now() / MINUTE) !== this.renderedMinute) this.render();
    }, 5_000);
  }

  /** The first minute of the window, as the `since` of the timeline query. */
  static windowStart(now = Date.now()): Date {
    return new Date((Math.floor(now / MINUTE) - WINDOW_MINUTES + 1) * MINUTE);
  }

  beginLoad(): void {
    this.lastId = undefined;
    this.buffered.length = 0;
  }

  load(timeline: LaunchTimeline): void {
    this.buckets.clear();
    for (const t of timeline.started) this.bucket(t).started++;
    for (const t of timeline.failed) this.bucket(t).failed++;
    this.lastId = timeline.lastId;
    const buffered = this.buffered.splice(0);
    for (const e of buffered) this.add(e, false);
    this.render(timeline.truncated);
  }

  /** A live log entry; counted when it is a launch attempt started or failed. */
  add(entry: LogEntry, render = true): void {
    if (!STARTED.has(entry.action) && !FAILED.has(entry.action)) return;
    if (this.lastId === undefined) {
      this.buffered.push(entry);
      return;
    }
    if (entry.id <= this.lastId) return;
    this.lastId = entry.id;
    const b = this.bucket(Date.parse(entry.timestamp));
    if (STARTED.has(entry.action)) b.started++;
    else b.failed++;
    if (render) this.render();
  }

  private bucket(t: number): Bucket {
    const key = Math.floor(t / MINUTE);
    let b = this.buckets.get(key);
    if (!b) this.buckets.set(key, (b = { started: 0, failed: 0 }));
    return b;
  }

  render(truncated = false): void {
    const nowMinute = Math.floor(Date.now() / MINUTE);
    this.renderedMinute = nowMinute;
    const first = nowMinute - WINDOW_MINUTES + 1;
    for (const key of this.buckets.keys()) if (key < first) this.buckets.delete(key);

    const series: Array<Bucket & { minute: number }> = [];
    let totalStarted = 0;
    let totalFailed = 0;
    let max = 0;
    for (let m = first; m <= nowMinute; m++) {
      const b = this.buckets.get(m) ?? { started: 0, failed: 0 };
      series.push({ minute: m, ...b });
      totalStarted += b.started;
      totalFailed += b.failed;
      max = Math.max(max, b.started, b.failed);
    }
    const top = niceMax(max);

    const W = Math.max(this.width, 240);
    const H = 160;
    const left = 36;
    const right = 8;
    const topPad = 8;
    const bottom = 22;
    const plotW = W - left - right;
    const plotH = H - topPad - bottom;
    const slot = plotW / WINDOW_MINUTES;
    const barW = Math.max(1, slot * 0.8);
    const y = (v: number) => topPad + plotH - (v / top) * plotH;

    const grid: SVGElement[] = [];
    for (const v of [0, top / 2, top]) {
      grid.push(
        svg('line', { class: 'grid', x1: left, x2: W - right, y1: y(v), y2: y(v) }),
        svg('text', { class: 'axis', x: left - 6, y: y(v) + 4, 'text-anchor': 'end' }, formatTick(v)),
      );
    }
    const bars: SVGElement[] = [];
    series.forEach((b, i) => {
      const x = left + i * slot + (slot - barW) / 2;
      const label = `${clock(b.minute)}: ${b.started} launched, ${b.failed} failed`;
      const g = svg('g', { class: 'bar' }, svg('title', {}, label));
      // A transparent full-height target so the tooltip works on empty minutes too.
      g.appendChild(svg('rect', { class: 'hit', x: left + i * slot, y: topPad, width: slot, height: plotH }));
      if (b.started) g.appendChild(svg('rect', { class: 'started', x, y: y(b.started), width: barW, height: y(0) - y(b.started) }));
      if (b.failed) g.appendChild(svg('rect', { class: 'failed', x: x + barW * 0.25, y: y(b.failed), width: barW * 0.5, height: y(0) - y(b.failed) }));
      bars.push(g);
      const minuteOfHour = new Date(b.minute * MINUTE).getMinutes();
      if (minuteOfHour % 10 === 0) {
        bars.push(svg('text', { class: 'axis', x: left + i * slot + slot / 2, y: H - 6, 'text-anchor': 'middle' }, clock(b.minute)));
      }
    });

    const summary = `${totalStarted} launch attempt${totalStarted === 1 ? '' : 's'} and ${totalFailed} failure${totalFailed === 1 ? '' : 's'} in the last hour`;
    const chart = svg(
      'svg',
      { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `Launches per minute: ${summary}` },
      ...grid,
      svg('line', { class: 'baseline', x1: left, x2: W - right, y1: y(0), y2: y(0) }),
      ...bars,
    );
    replaceChildren(this.plot, chart);
    replaceChildren(this.summary, summary + (truncated ? ' (older entries not all read)' : '') + '.');
    this.summary.dataset.started = String(totalStarted);
    this.summary.dataset.failed = String(totalFailed);
  }
}

function niceMax(max: number): number {
  if (max <= 2) return 2;
  const pow = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 4, 6, 8, 10]) if (step * pow >= max) return step * pow;
  return 10 * pow;
}

function formatTick(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

function clock(minute: number): string {
  return new Date(minute * MINUTE).toLocaleTimeString(undefined, { hour: 'numeric', minute: '2-digit' });
}

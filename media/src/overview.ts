// Stat cards, health and its checks, and the engine / scanner / last launch details from /status.
import type { HealthResponse, IsoTime, StatsOverview, StatusResponse } from '../../src/shared/api';
import { h, icon, replaceChildren, type Child } from './dom';
import { formatBytes, formatCount, formatDateTime, formatDuration, formatRelative } from './format';

const CARDS: Array<{ key: keyof StatsOverview; label: string; hint: string }> = [
  { key: 'total', label: 'Items', hint: 'Known items: launched + pending + failed' },
  { key: 'launched', label: 'Launched', hint: 'Items whose launch succeeded' },
  { key: 'pending', label: 'Pending', hint: 'Items waiting, scheduled, backing off or running' },
  { key: 'failed', label: 'Failed', hint: 'Items whose attempts are exhausted' },
  { key: 'totalLaunches', label: 'Launch attempts', hint: 'Attempts ever started' },
  { key: 'totalFailed', label: 'Failed attempts', hint: 'Attempts ever failed' },
  { key: 'lastPollAt', label: 'Last poll', hint: 'Start time of the last poll' },
];

const HEALTH_ICON: Record<string, string> = { healthy: 'pass', degraded: 'warning', unhealthy: 'error' };
const CHECK_TEXT: Record<string, string> = {
  ok: 'Persisting and answering queries',
  error: 'The last persist, journal write or query failed',
  running: 'Polling sources and launching items',
  stopped: 'Stopped by the user or by settings',
  restricted: 'Workspace not trusted: nothing is launched',
  stalled: 'No poll for more than 3 poll intervals',
};
const CHECK_ICON: Record<string, string> = {
  ok: 'pass',
  running: 'pass',
  error: 'error',
  stalled: 'error',
  stopped: 'debug-pause',
  restricted: 'shield',
};

/** A <time> that shows "12 s ago" (kept fresh by `refreshTimes`) and the full time as a tooltip. */
export function timeAgo(iso: IsoTime | null | undefined, never = 'never'): Child {
  if (!iso) return h('span', { class: 'muted' }, never);
  return h('time', { datetime: iso, title: formatDateTime(iso), 'data-relative': '' }, formatRelative(iso));
}

/** A duration that keeps growing from `since` (uptime), kept fresh by `refreshTimes`. */
function durationSince(since: IsoTime, ms: number): Child {
  // Anchored to the local clock at render time, so clock skew with the engine does not show.
  const anchor = new Date(Date.now() - ms).toISOString();
  return h('span', { 'data-since': anchor, title: `since ${formatDateTime(since)}` }, formatDuration(ms));
}

export function refreshTimes(root: ParentNode): void {
  const now = Date.now();
  root.querySelectorAll<HTMLTimeElement>('time[data-relative]').forEach((t) => {
    t.textContent = formatRelative(t.dateTime, now);
  });
  root.querySelectorAll<HTMLElement>('[data-since]').forEach((el) => {
    el.textContent = formatDuration(now - Date.parse(el.dataset.since!));
  });
}

function dl(rows: Array<[string, Child]>): HTMLDListElement {
  return h('dl', { class: 'details' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '—')]));
}

function section(title: string, id: string, ...children: Child[]): HTMLElement {
  return h('section', { class: 'panel', 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

export class OverviewView {
  readonly cards: HTMLElement;
  readonly health: HTMLElement;
  readonly details: HTMLElement;
  private readonly cardValues = new Map<keyof StatsOverview, HTMLElement>();
  private readonly healthBody = h('div', { class: 'health-body' });
  private readonly engineBody = h('div');
  private readonly scannerBody = h('div');
  private readonly lastLaunchBody = h('div');

  constructor() {
    const list = h('dl', { class: 'cards' });
    for (const c of CARDS) {
      const value = h('dd', { class: 'card-value' }, '—');
      this.cardValues.set(c.key, value);
      list.appendChild(h('div', { class: 'card', 'data-stat': c.key, title: c.hint }, h('dt', { class: 'card-label' }, c.label), value));
    }
    this.cards = h('section', { class: 'cards-section', 'aria-label': 'Counters' }, list);
    this.health = section('Health', 'health-title', this.healthBody);
    this.details = h(
      'div',
      { class: 'detail-grid' },
      section('Engine', 'engine-title', this.engineBody),
      section('Scanner', 'scanner-title', this.scannerBody),
      section('Last launch', 'last-launch-title', this.lastLaunchBody),
    );
    this.clear();
  }

  /** The unreachable (or not yet reached) state: no numbers rather than stale ones. */
  clear(why = 'Unknown while the engine is not reachable.'): void {
    this.setStats(undefined);
    replaceChildren(this.healthBody, h('p', { class: 'muted' }, why));
    for (const b of [this.engineBody, this.scannerBody, this.lastLaunchBody]) replaceChildren(b, h('p', { class: 'muted' }, '—'));
  }

  setStats(stats: StatsOverview | undefined): void {
    for (const c of CARDS) {
      const el = this.cardValues.get(c.key)!;
      if (!stats) {
        replaceChildren(el, '—');
      } else if (c.key === 'lastPollAt') {
        replaceChildren(el, timeAgo(stats.lastPollAt));
      } else {
        const n = stats[c.key];
        replaceChildren(el, formatCount(n));
        el.dataset.value = String(n);
      }
      if (!stats) delete el.dataset.value;
    }
  }

  setHealth(health: HealthResponse): void {
    const checks = Object.entries(health.checks).map(([name, value]) =>
      h(
        'li',
        { class: `check check-${value}`, 'data-check': name },
        icon(CHECK_ICON[value] ?? 'circle-outline'),
        h('span', { class: 'check-name' }, name),
        h('span', { class: 'check-value' }, value),
        h('span', { class: 'muted check-text' }, CHECK_TEXT[value] ?? ''),
      ),
    );
    replaceChildren(
      this.healthBody,
      h(
        'p',
        { class: `health-status status-${health.status}`, 'data-health': health.status },
        icon(HEALTH_ICON[health.status] ?? 'question'),
        h('strong', {}, health.status),
        h('span', { class: 'muted' }, ` ${health.engine} ${health.version}`),
      ),
      h('ul', { class: 'checks', 'aria-label': 'Checks' }, ...checks),
    );
  }

  setStatus(s: StatusResponse): void {
    const e = s.engine;
    replaceChildren(
      this.engineBody,
      dl([
        ['State', h('span', { class: `state state-${e.state}` }, e.state)],
        ['Version', `${e.name} ${e.version}`],
        ['Started', timeAgo(e.startedAt)],
        ['Uptime', durationSince(e.startedAt, e.uptimeMs)],
        ['Poll interval', formatDuration(e.pollIntervalMs)],
        ['Concurrency', `${e.running} running of ${e.concurrency}`],
        ['Polls', formatCount(e.polls)],
        ['API', h('code', {}, s.server.url)],
        ['Database', h('code', { title: s.database.path }, s.database.path)],
        ['Size', formatBytes(s.database.sizeBytes)],
        ['Last persist', timeAgo(s.database.lastPersistAt)],
        s.database.lastError ? ['Database error', h('span', { class: 'error-text' }, s.database.lastError)] : null,
      ].filter((r): r is [string, Child] => r !== null)),
    );

    const sc = s.scanner;
    const sources = sc.sources.length
      ? h(
          'table',
          { class: 'sources' },
          h('caption', {}, 'Sources'),
          h(
            'thead',
            {},
            h('tr', {}, ...['Location', 'Items', 'Last scan', 'Error'].map((t) => h('th', { scope: 'col' }, t))),
          ),
          h(
            'tbody',
            {},
            ...sc.sources.map((src) =>
              h(
                'tr',
                {},
                h('td', { title: `${src.kind}: ${src.location}` }, h('code', {}, src.location)),
                h('td', { class: 'num', title: `${formatCount(src.itemsDiscovered)} discovered since the engine started` }, formatCount(src.itemsKnown)),
                h('td', {}, timeAgo(src.lastScanAt)),
                h('td', {}, src.lastError ? h('span', { class: 'error-text' }, src.lastError) : h('span', { class: 'muted' }, 'none')),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No sources (open a workspace folder).');
    replaceChildren(
      this.scannerBody,
      dl([
        ['Last scan', timeAgo(sc.lastScanAt)],
        ['Scan took', sc.lastScanDurationMs === null ? '—' : formatDuration(sc.lastScanDurationMs)],
        // Per engine process: a restart sets them to 0, while the queue's items are still known
        // (the Items column below and the Total card count those).
        ['Scans since start', formatCount(sc.scans)],
        ['Discovered since start', formatCount(sc.itemsDiscovered)],
        ['Rejected since start', formatCount(sc.itemsRejected)],
      ]),
      sources,
    );

    const l = s.lastLaunch;
    replaceChildren(
      this.lastLaunchBody,
      l
        ? dl([
            ['Item', h('span', { title: l.itemId }, l.name === l.itemId ? l.name : `${l.name} (${l.itemId})`)],
            ['Outcome', h('span', { class: `outcome outcome-${l.outcome}` }, l.outcome)],
            ['Attempt', String(l.attempt)],
            ['Started', timeAgo(l.startedAt)],
            ['Duration', l.durationMs === null ? (l.outcome === 'running' ? 'running' : '—') : formatDuration(l.durationMs)],
            ['Exit', l.exitCode !== null ? `code ${l.exitCode}` : l.signal ? `signal ${l.signal}` : '—'],
            ...(l.error ? ([['Error', h('span', { class: 'error-text' }, l.error)]] as Array<[string, Child]>) : []),
          ])
        : h('p', { class: 'muted' }, 'Nothing launched yet.'),
    );
  }
}

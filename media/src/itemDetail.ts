// The item detail panel: opened by clicking an item id in the log table. Shows the item's
// definition and attempts (`GET /items/{id}`) and the output of the selected attempt (its first
// and last part, from `GET /items/{id}/attempts/{n}/output`); "Open in Terminal" runs the
// extension's Show Output for all of it, followed live. Every engine string is text.
import type { AttemptDetail, ItemDetail, LogEntry } from '../../src/shared/api';
import { ITEM_ACTIONS, itemActionApplies, type ItemAction } from '../../src/shared/itemActions';
import { OUTPUT_STREAMS, type OutputExcerpt, type OutputStream } from '../../src/shared/webviewProtocol';
import { AttemptChart } from './attemptChart';
import { h, icon, replaceChildren, type Child } from './dom';
import { formatBytes, formatDateTime, formatDuration } from './format';
import { itemAction, openSource, query, showOutput } from './rpc';

/** A burst of log entries for the open item reads it again at most this often. */
const LIVE_REFRESH_MS = 1_000;
/** While the selected attempt runs, its output is read again this often (the terminal follows it live). */
const RUNNING_REFRESH_MS = 2_000;
const STREAM_LABEL: Record<OutputStream, string> = { all: 'All output', stdout: 'stdout', stderr: 'stderr' };
/** The item's control buttons: label, codicon, tooltip (the Items view's own icons). */
const ACTION_BUTTON: Record<ItemAction, { label: string; icon: string; title: string }> = {
  retry: { label: 'Retry', icon: 'debug-restart', title: 'Run the failed item again, its attempts reset' },
  cancel: { label: 'Cancel', icon: 'stop-circle', title: 'End the running attempt (or the wait) and fail the item, without retrying' },
  hold: { label: 'Hold', icon: 'debug-pause', title: 'Keep the item from launching until released' },
  release: { label: 'Release', icon: 'play', title: 'Let the held item launch again' },
};
/** What the engine writes as the source of an item submitted over HTTP: no file to open. */
const SUBMITTED_SOURCE = 'api';

export class ItemDetailView {
  readonly element: HTMLElement;
  private readonly title = h('h2', { id: 'detail-title' });
  private readonly stateBadge = h('span', { class: 'state-badge' });
  private readonly errorLine = h('p', { class: 'item-error error-text', hidden: true });
  private readonly definition = h('div', { class: 'definition' });
  private readonly attempts = h('div', { class: 'attempts' });
  private readonly history = new AttemptChart();
  private readonly output = h('div', { class: 'output-body', 'aria-live': 'polite' });
  private readonly outputTitle = h('h3', { id: 'output-title' }, 'Output');
  private readonly streamButtons = new Map<OutputStream, HTMLButtonElement>();
  private readonly terminalButton: HTMLButtonElement;
  private readonly actionButtons = new Map<ItemAction, HTMLButtonElement>();
  private readonly showOutputButton: HTMLButtonElement;
  private itemId: string | undefined;
  private detail: ItemDetail | undefined;
  private attempt: number | undefined;
  /** True once the user picked an attempt: new attempts then do not move the selection. */
  private attemptPicked = false;
  private stream: OutputStream = 'all';
  /** Bumped by every open and close; answers for an older one are dropped. */
  private generation = 0;
  private liveTimer: ReturnType<typeof setTimeout> | undefined;
  /** What the output area shows now, to skip redrawing the same text. */
  private renderedOutput: string | undefined;

  constructor(
    private readonly onOpenChange: (itemId: string | undefined) => void,
    private readonly onError: (message: string) => void,
  ) {
    const refresh = h('button', { type: 'button', class: 'secondary', title: 'Read the item again' }, icon('refresh'), 'Refresh');
    refresh.addEventListener('click', () => void this.reload());
    const close = h('button', { type: 'button', class: 'secondary', 'aria-label': 'Close the item detail' }, icon('close'), 'Close');
    close.addEventListener('click', () => this.close());
    // Shown only when they apply to the item's state (set by render); hidden until it is read.
    for (const action of ITEM_ACTIONS) {
      const spec = ACTION_BUTTON[action];
      const b = h('button', { type: 'button', class: 'secondary item-action', 'data-action': action, title: spec.title, hidden: true }, icon(spec.icon), spec.label);
      b.addEventListener('click', () => void this.runAction(action, b));
      this.actionButtons.set(action, b);
    }
    this.showOutputButton = h(
      'button',
      { type: 'button', class: 'secondary item-action', 'data-action': 'showOutput', title: 'The latest attempt’s output in a terminal, followed live', hidden: true },
      icon('output'),
      'Show Output',
    );
    this.showOutputButton.addEventListener('click', () => void this.showLatestOutput());
    this.terminalButton = h('button', { type: 'button', class: 'secondary' }, icon('terminal'), 'Open in Terminal');
    this.terminalButton.addEventListener('click', () => void this.openTerminal());
    const streams = h('div', { class: 'streams', role: 'group', 'aria-label': 'Output stream' });
    for (const s of OUTPUT_STREAMS) {
      const b = h('button', { type: 'button', class: `secondary stream-${s}`, 'data-stream': s, 'aria-pressed': s === this.stream }, STREAM_LABEL[s]);
      b.addEventListener('click', () => this.selectStream(s));
      this.streamButtons.set(s, b);
      streams.appendChild(b);
    }
    this.element = h(
      'section',
      { class: 'panel item-detail', 'aria-labelledby': 'detail-title', hidden: true, tabindex: -1 },
      h('header', { class: 'detail-head' }, this.title, this.stateBadge, h('div', { class: 'actions', role: 'toolbar', 'aria-label': 'Item commands' }, ...this.actionButtons.values(), this.showOutputButton, refresh, close)),
      this.errorLine,
      h(
        'div',
        { class: 'detail-cols' },
        h('section', { 'aria-labelledby': 'definition-title' }, h('h3', { id: 'definition-title' }, 'Definition'), this.definition),
        h('section', { 'aria-labelledby': 'attempts-title' }, h('h3', { id: 'attempts-title' }, 'Attempts'), this.attempts),
      ),
      h('section', { class: 'history', 'aria-labelledby': 'history-title' }, h('h3', { id: 'history-title' }, 'Last 50 attempts'), this.history.element),
      h(
        'section',
        { class: 'output', 'aria-labelledby': 'output-title' },
        h('div', { class: 'output-head' }, this.outputTitle, streams, this.terminalButton),
        this.output,
      ),
    );
    this.element.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') this.close();
    });
  }

  get openItemId(): string | undefined {
    return this.itemId;
  }

  /** Shows an item (a click on its id): read it, select its latest attempt, show that output. */
  async open(itemId: string, { reveal = true } = {}): Promise<void> {
    this.generation++;
    this.itemId = itemId;
    this.detail = undefined;
    this.attempt = undefined;
    this.attemptPicked = false;
    this.element.hidden = false;
    this.element.dataset.itemId = itemId;
    // The item before's state (and its buttons) must not stand for this one while it is read.
    delete this.element.dataset.state;
    replaceChildren(this.stateBadge);
    replaceChildren(this.title, itemId);
    replaceChildren(this.definition, h('p', { class: 'muted' }, 'Loading…'));
    replaceChildren(this.attempts);
    this.renderedOutput = undefined;
    replaceChildren(this.output);
    for (const b of [...this.actionButtons.values(), this.showOutputButton]) b.hidden = true;
    this.onOpenChange(itemId);
    if (reveal) {
      this.element.scrollIntoView({ block: 'start' });
      this.element.focus({ preventScroll: true });
    }
    await this.reload();
  }

  close(): void {
    if (!this.itemId) return;
    this.generation++;
    clearTimeout(this.liveTimer);
    this.liveTimer = undefined;
    this.itemId = this.detail = undefined;
    this.element.hidden = true;
    delete this.element.dataset.itemId;
    this.onOpenChange(undefined);
  }

  /** A live log entry: one about the open item means news (a new attempt, an outcome). */
  addLive(entry: LogEntry): void {
    if (!this.itemId || entry.itemId !== this.itemId) return;
    this.reloadIn(LIVE_REFRESH_MS);
  }

  private reloadIn(ms: number): void {
    this.liveTimer ??= setTimeout(() => {
      this.liveTimer = undefined;
      if (document.visibilityState === 'visible') void this.reload();
      else this.reloadIn(ms);
    }, ms);
  }

  /** Reads the open item again, keeping the selected attempt (or following the latest). */
  async reload(): Promise<void> {
    const id = this.itemId;
    if (!id) return;
    const generation = this.generation;
    let detail: ItemDetail;
    try {
      detail = await query('item', { id });
    } catch (err) {
      if (generation !== this.generation) return;
      replaceChildren(this.definition, h('p', { class: 'error-text' }, `Could not read item ${id}: ${(err as Error).message}`));
      replaceChildren(this.attempts);
      this.renderedOutput = undefined;
      replaceChildren(this.output);
      this.onError((err as Error).message);
      return;
    }
    if (generation !== this.generation) return;
    this.detail = detail;
    this.render(detail);
    const latest = detail.attempts[detail.attempts.length - 1]?.attempt;
    if (!this.attemptPicked || !detail.attempts.some((a) => a.attempt === this.attempt)) this.attempt = latest;
    this.renderAttempts(detail);
    this.history.render(detail);
    await this.loadOutput();
    if (generation === this.generation && detail.attempts.some((a) => a.attempt === this.attempt && a.outcome === 'running')) {
      this.reloadIn(RUNNING_REFRESH_MS);
    }
  }

  private render(d: ItemDetail): void {
    const it = d.item;
    replaceChildren(this.title, it.name || it.id);
    this.element.dataset.state = d.state;
    this.stateBadge.className = `state-badge state-${d.state}`;
    replaceChildren(this.stateBadge, d.state);
    for (const [action, b] of this.actionButtons) b.hidden = !itemActionApplies(action, d.state, d.item.service === true);
    this.showOutputButton.hidden = d.attempts.length === 0;
    this.errorLine.hidden = !d.error;
    replaceChildren(this.errorLine, d.error ? `Failed for good: ${d.error}` : '');
    const code = (text: string) => h('code', {}, text);
    const env = Object.entries(it.env);
    const rows: Array<[string, Child]> = [
      ['Id', code(it.id)],
      ['Command', code(it.command)],
      ['Args', it.args.length ? h('span', { class: 'args' }, ...it.args.map((a) => code(JSON.stringify(a)))) : h('span', { class: 'muted' }, 'none')],
      ['Shell', it.shell ? 'yes' : 'no'],
      ['Cwd', it.cwd ? code(it.cwd) : h('span', { class: 'muted' }, 'the queue’s workspace folder')],
      ['Env', env.length ? h('pre', { class: 'env' }, env.map(([k, v]) => `${k}=${v}`).join('\n')) : h('span', { class: 'muted' }, 'inherited only')],
      ['Timeout', it.timeoutMs > 0 ? formatDuration(it.timeoutMs) : 'none'],
      ['Max attempts', String(it.maxAttempts)],
    ];
    if (it.runAt) rows.push(['Run at', formatDateTime(it.runAt)]);
    if (it.schedule !== null && it.schedule !== undefined) rows.push(['Schedule', code(JSON.stringify(it.schedule))]);
    if (it.dependsOn.length) rows.push(['Depends on', code(it.dependsOn.join(', '))]);
    // Why a blocked item waits: the dependencies not launched yet (or not known yet).
    if (d.waitingFor?.length) rows.push(['Waits for', code(d.waitingFor.join(', '))]);
    if (it.priority) rows.push(['Priority', String(it.priority)]);
    rows.push(['Source', it.source === SUBMITTED_SOURCE ? code('submitted over HTTP') : this.sourceLink(it.source)]);
    replaceChildren(this.definition, h('dl', { class: 'details' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
  }

  /** The queue file's path as a link that opens it at the item's entry. */
  private sourceLink(source: string): HTMLButtonElement {
    const link = h('button', { type: 'button', class: 'link-button source-link', title: 'Open the queue file at this item’s entry' }, h('code', {}, source));
    link.addEventListener('click', () => {
      const id = this.itemId;
      if (id) openSource(id).catch((err: Error) => this.onError(`Could not open ${source}: ${err.message}`));
    });
    return link;
  }

  /** Runs the extension's command for the open item, then reads it again to show its new state. */
  private async runAction(action: ItemAction, button: HTMLButtonElement): Promise<void> {
    const id = this.itemId;
    if (!id) return;
    button.disabled = true;
    try {
      await itemAction(id, action);
    } catch (err) {
      this.onError(`${ACTION_BUTTON[action].label} failed: ${(err as Error).message}`);
    } finally {
      button.disabled = false;
    }
    if (id === this.itemId) await this.reload();
  }

  private async showLatestOutput(): Promise<void> {
    const latest = this.detail?.attempts[this.detail.attempts.length - 1];
    if (!this.itemId || !latest) return;
    try {
      await showOutput(this.itemId, latest.attempt);
    } catch (err) {
      this.onError(`Show Output failed: ${(err as Error).message}`);
    }
  }

  private renderAttempts(d: ItemDetail): void {
    if (d.attempts.length === 0) {
      replaceChildren(this.attempts, h('p', { class: 'muted' }, d.outcome === 'failed' ? 'No attempt: it failed before launching.' : 'No attempt yet.'));
      return;
    }
    const head = ['#', 'Started', 'Duration', 'Outcome', 'Exit', 'Output'];
    const table = h(
      'table',
      { class: 'attempts-table stackable' },
      h('caption', { class: 'visually-hidden' }, 'Attempts, first to last; select one to see its output'),
      h('thead', {}, h('tr', {}, ...head.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...d.attempts.map((a) => this.attemptRow(a))),
    );
    replaceChildren(this.attempts, table);
  }

  private attemptRow(a: AttemptDetail): HTMLTableRowElement {
    const selected = a.attempt === this.attempt;
    const pick = h('button', { type: 'button', class: 'link-button attempt-pick', 'aria-pressed': selected, title: `Show the output of attempt ${a.attempt}` }, String(a.attempt));
    pick.addEventListener('click', () => this.selectAttempt(a.attempt));
    const duration =
      a.durationMs !== null
        ? formatDuration(a.durationMs)
        : a.outcome === 'running'
          ? h('span', { 'data-since': a.startedAt }, formatDuration(Date.now() - Date.parse(a.startedAt)))
          : '—';
    const exit: Child[] = [];
    if (a.exitCode !== null) exit.push(`exit ${a.exitCode}`);
    if (a.signal) exit.push(`${exit.length ? ', ' : ''}${a.signal}`);
    if (a.error) exit.push(h('span', { class: 'attempt-error' }, a.error));
    // What the item's problem matcher found; the Problems panel shows them in full.
    if (a.problems.length > 0) {
      const where = a.problems.slice(0, 10).map((p) => `${p.file}:${p.line}${p.column !== null ? `:${p.column}` : ''} ${p.message}`);
      if (a.problems.length > 10) where.push(`… and ${a.problems.length - 10} more`);
      exit.push(h('span', { class: 'attempt-problems', title: where.join('\n') }, `${exit.length ? ' · ' : ''}${a.problems.length} problem${a.problems.length === 1 ? '' : 's'}`));
    }
    const row = h(
      'tr',
      { 'data-attempt': a.attempt, class: selected ? 'selected' : undefined },
      h('td', { 'data-label': 'Attempt' }, pick),
      h('td', { 'data-label': 'Started' }, h('time', { datetime: a.startedAt, title: formatDateTime(a.startedAt) }, formatDateTime(a.startedAt))),
      h('td', { 'data-label': 'Duration', class: 'num' }, duration),
      h('td', { 'data-label': 'Outcome', class: `outcome-${a.outcome}` }, a.outcome),
      h('td', { 'data-label': 'Exit', class: 'exit' }, ...(exit.length ? exit : ['—'])),
      h('td', { 'data-label': 'Output', class: 'num' }, a.outputBytes !== null ? formatBytes(a.outputBytes) : a.outcome === 'running' ? '…' : 'none'),
    );
    row.addEventListener('click', (e) => {
      if (!(e.target as Element).closest('button')) this.selectAttempt(a.attempt);
    });
    return row;
  }

  private selectAttempt(n: number): void {
    this.attemptPicked = true;
    if (n === this.attempt) return;
    this.attempt = n;
    if (this.detail) this.renderAttempts(this.detail);
    void this.loadOutput();
  }

  private selectStream(s: OutputStream): void {
    if (s === this.stream) return;
    this.stream = s;
    for (const [k, b] of this.streamButtons) b.setAttribute('aria-pressed', String(k === s));
    void this.loadOutput();
  }

  private async loadOutput(): Promise<void> {
    const id = this.itemId;
    const a = this.detail?.attempts.find((x) => x.attempt === this.attempt);
    this.terminalButton.disabled = !a;
    if (!id || !a) {
      replaceChildren(this.outputTitle, 'Output');
      this.renderedOutput = undefined;
      replaceChildren(this.output, h('p', { class: 'muted' }, 'No attempt, so no output.'));
      return;
    }
    replaceChildren(this.outputTitle, `Output of attempt ${a.attempt}${a.outcome === 'running' ? ' (running)' : ''}`);
    // A running attempt's size may not be known yet (the engine records it at the end): read it anyway.
    if (a.outputBytes === null && a.outcome !== 'running') {
      this.renderedOutput = undefined;
      replaceChildren(this.output, h('p', { class: 'muted' }, 'No output was captured: the process did not start.'));
      return;
    }
    const generation = this.generation;
    const wanted = { attempt: a.attempt, stream: this.stream };
    this.output.setAttribute('aria-busy', 'true');
    try {
      const excerpt = await query('output', { id, attempt: a.attempt, stream: this.stream });
      if (generation !== this.generation || wanted.attempt !== this.attempt || wanted.stream !== this.stream) return;
      this.renderOutput(excerpt, a);
    } catch (err) {
      if (generation !== this.generation) return;
      this.renderedOutput = undefined;
      replaceChildren(this.output, h('p', { class: 'error-text output-error' }, `Could not read the output: ${(err as Error).message}`));
    } finally {
      this.output.setAttribute('aria-busy', 'false');
    }
  }

  private renderOutput(x: OutputExcerpt, a: AttemptDetail): void {
    // Read again while the attempt runs: leave the text (and the user's selection) alone when
    // nothing changed, and keep where each block was scrolled to (at the end: stay at the end).
    const key = JSON.stringify([this.itemId, a.attempt, a.outcome, this.stream, x]);
    if (key === this.renderedOutput) return;
    this.renderedOutput = key;
    const scrolled = Array.from(this.output.querySelectorAll('pre'), (p) => ({
      top: p.scrollTop,
      atEnd: p.scrollTop > 0 && p.scrollTop + p.clientHeight >= p.scrollHeight - 2,
    }));
    this.fillOutput(x, a);
    this.output.querySelectorAll('pre').forEach((p, i) => {
      const was = scrolled[i];
      if (was) p.scrollTop = was.atEnd ? p.scrollHeight : was.top;
    });
  }

  private fillOutput(x: OutputExcerpt, a: AttemptDetail): void {
    const cls = `output-text stream-${this.stream}`;
    const which = this.stream === 'all' ? 'output' : this.stream;
    if (x.totalBytes === 0 && !x.head) {
      replaceChildren(this.output, h('p', { class: 'muted output-empty' }, `No ${which}${a.outcome === 'running' ? ' yet' : ''}.`));
      return;
    }
    const parts: Child[] = [];
    if (x.tail === null) {
      parts.push(h('p', { class: 'muted output-hint' }, `All ${formatBytes(x.totalBytes)} of ${which}.`));
      parts.push(h('pre', { class: cls, tabindex: 0 }, x.head));
    } else {
      parts.push(
        h(
          'p',
          { class: 'muted output-hint' },
          `The first ${formatBytes(byteLength(x.head))} and the last ${formatBytes(byteLength(x.tail))} of ${formatBytes(x.totalBytes)} of ${which}. `,
          'Open in Terminal shows all of it.',
        ),
      );
      parts.push(h('pre', { class: cls, tabindex: 0 }, x.head));
      parts.push(h('p', { class: 'output-omitted', role: 'separator' }, `… ${formatBytes(x.omittedBytes)} not shown …`));
      parts.push(h('pre', { class: cls, tabindex: 0 }, x.tail));
    }
    replaceChildren(this.output, ...parts);
  }

  private async openTerminal(): Promise<void> {
    if (!this.itemId || this.attempt === undefined) return;
    try {
      await showOutput(this.itemId, this.attempt);
    } catch (err) {
      this.onError(`Open in Terminal failed: ${(err as Error).message}`);
    }
  }
}

function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

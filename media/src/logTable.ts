// The filterable log table: action multi-select, minimum level and text search map onto /logs
// parameters; older pages load on demand; matching live `log` events are added at the top.
import { LOG_ACTIONS, LOG_LEVELS, type LogAction, type LogEntry, type LogLevel } from '../../src/shared/api';
import { isLogFilterActive, matchesLogFilter, type LogFilter } from '../../src/shared/logFilter';
import type { LogPageToken } from '../../src/shared/webviewProtocol';
import { h, icon, replaceChildren } from './dom';
import { formatClock, formatDateTime } from './format';
import { query } from './rpc';

const PAGE_SIZE = 100;
/** Rows kept when live entries keep arriving; older ones are dropped and can be paged in again. */
const MAX_ROWS = 2000;
const LEVEL_ICON: Record<LogLevel, string> = { debug: 'debug', info: 'info', warn: 'warning', error: 'error' };

/** The filter as the controls hold it: every field present, so two of them compare as JSON. */
type ControlsFilter = Required<Pick<LogFilter, 'actions' | 'q'>> & Pick<LogFilter, 'level'>;

export class LogTable {
  readonly element: HTMLElement;
  private filter: ControlsFilter;
  private readonly tbody = h('tbody');
  private readonly scroller: HTMLElement;
  private readonly footer = h('span', { class: 'muted', 'aria-live': 'polite' });
  private readonly loadMore: HTMLButtonElement;
  private readonly actionSummary = h('span');
  private readonly actionBoxes = new Map<LogAction, HTMLInputElement>();
  private readonly levelSelect: HTMLSelectElement;
  private readonly search: HTMLInputElement;
  private readonly clearButton: HTMLButtonElement;
  /** Ids shown, newest first (ids only grow, so this is also time order). */
  private ids: number[] = [];
  private readonly shown = new Set<number>();
  private next: LogPageToken | undefined;
  /** Bumped by every reload; answers to older reloads are dropped. */
  private generation = 0;
  private loading = false;
  /** A reload is under way: live entries wait for its rows. */
  private reloading = false;
  private readonly buffered: LogEntry[] = [];
  private searchTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    filter: LogFilter,
    private readonly onFilterChange: (filter: LogFilter) => void,
    private readonly onError: (message: string) => void,
    onItem: (itemId: string) => void,
  ) {
    this.filter = { actions: [...(filter.actions ?? [])], level: filter.level, q: filter.q ?? '' };
    const picker = this.actionPicker();
    this.levelSelect = this.levelControl();
    this.search = this.searchControl();
    this.clearButton = this.clearControl();
    this.loadMore = h('button', { type: 'button', class: 'secondary' }, 'Load older entries');
    this.loadMore.addEventListener('click', () => void this.page());
    this.scroller = this.logScroller();
    // One listener for every row's item link (rows come and go by the thousand).
    this.tbody.addEventListener('click', (e) => {
      const link = (e.target as Element).closest<HTMLElement>('button.item-link');
      if (link?.dataset.itemId) onItem(link.dataset.itemId);
    });

    this.element = h(
      'section',
      { class: 'panel logs-panel', 'aria-labelledby': 'logs-title' },
      h('h2', { id: 'logs-title' }, 'Logs'),
      h(
        'form',
        { class: 'log-filter', role: 'search', 'aria-label': 'Filter logs' },
        picker,
        h('label', { for: 'log-level' }, 'Level ', this.levelSelect),
        h('label', { for: 'log-search' }, 'Search ', this.search),
        this.clearButton,
      ),
      this.scroller,
      h('div', { class: 'log-footer' }, this.footer, this.loadMore),
    );
    this.element.querySelector('form')!.addEventListener('submit', (e) => e.preventDefault());
    this.updateFilterControls();
  }

  /** The action multi-select: a checkbox per action in a list that opens and closes like a dropdown. */
  private actionPicker(): HTMLDetailsElement {
    const boxes = LOG_ACTIONS.map((a) => {
      const box = h('input', { type: 'checkbox', value: a, id: `action-${a}` });
      box.checked = this.filter.actions.includes(a);
      box.addEventListener('change', () => this.filterChanged());
      this.actionBoxes.set(a, box);
      return h('label', { class: 'action-option', for: `action-${a}` }, box, a);
    });
    const allActions = h('button', { type: 'button', class: 'link-button' }, 'All actions');
    allActions.addEventListener('click', () => {
      for (const b of this.actionBoxes.values()) b.checked = false;
      this.filterChanged();
    });
    const picker = h(
      'details',
      { class: 'action-picker' },
      h('summary', {}, 'Actions: ', this.actionSummary),
      h('fieldset', {}, h('legend', {}, 'Show only these actions'), h('div', { class: 'action-grid' }, ...boxes), allActions),
    );

    // Behave like a dropdown: Escape or a click elsewhere closes the action list.
    document.addEventListener('click', (e) => {
      if (picker.open && !picker.contains(e.target as Node)) picker.open = false;
    });
    picker.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && picker.open) {
        picker.open = false;
        picker.querySelector('summary')?.focus();
      }
    });
    return picker;
  }

  /** The minimum level. */
  private levelControl(): HTMLSelectElement {
    const select = h(
      'select',
      { id: 'log-level' },
      h('option', { value: '' }, 'all levels'),
      ...LOG_LEVELS.map((l) => h('option', { value: l }, `${l} and above`)),
    );
    select.value = this.filter.level ?? '';
    select.addEventListener('change', () => this.filterChanged());
    return select;
  }

  /** The text search: applied 300 ms after the last keystroke, or at once on Enter. */
  private searchControl(): HTMLInputElement {
    const search = h('input', { type: 'search', id: 'log-search', placeholder: 'words in the message', spellcheck: 'false' });
    search.value = this.filter.q;
    search.addEventListener('input', () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.filterChanged(), 300);
    });
    search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        clearTimeout(this.searchTimer);
        this.filterChanged();
      }
    });
    return search;
  }

  private clearControl(): HTMLButtonElement {
    const button = h('button', { type: 'button', class: 'secondary' }, icon('clear-all'), 'Clear filter');
    button.addEventListener('click', () => {
      for (const b of this.actionBoxes.values()) b.checked = false;
      this.levelSelect.value = '';
      this.search.value = '';
      this.filterChanged();
    });
    return button;
  }

  /** The table of entries, newest first, in a scrolling region. */
  private logScroller(): HTMLElement {
    const table = h(
      'table',
      { class: 'logs' },
      h('caption', { class: 'visually-hidden' }, 'Log entries, newest first'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['Time', 'Level', 'Action', 'Item', 'Message'].map((t) => h('th', { scope: 'col', class: `col-${t.toLowerCase()}` }, t)),
        ),
      ),
      this.tbody,
    );
    return h('div', { class: 'log-scroll', tabindex: 0, role: 'region', 'aria-label': 'Log entries' }, table);
  }

  get scrollTop(): number {
    return this.scroller.scrollTop;
  }
  set scrollTop(v: number) {
    this.scroller.scrollTop = v;
  }
  onScroll(listener: () => void): void {
    this.scroller.addEventListener('scroll', listener, { passive: true });
  }

  private filterChanged(): void {
    const actions = LOG_ACTIONS.filter((a) => this.actionBoxes.get(a)!.checked);
    const level = (this.levelSelect.value || undefined) as LogLevel | undefined;
    const next: ControlsFilter = { actions, level, q: this.search.value };
    if (JSON.stringify(next) === JSON.stringify(this.filter)) return;
    this.filter = next;
    this.updateFilterControls();
    this.onFilterChange(next);
    void this.reload();
  }

  private updateFilterControls(): void {
    const n = this.filter.actions.length;
    this.actionSummary.textContent = n === 0 ? 'all' : n <= 2 ? this.filter.actions.join(', ') : `${n} selected`;
    this.clearButton.disabled = !isLogFilterActive(this.filter);
  }

  /** Shows the unreachable state; rows come back with the next reload. */
  showUnavailable(text: string): void {
    this.generation++;
    this.loading = false;
    this.reloading = false;
    this.scroller.setAttribute('aria-busy', 'false');
    this.buffered.length = 0;
    this.resetRows();
    this.message(text);
    this.footer.textContent = '';
    this.loadMore.hidden = true;
  }

  async reload(): Promise<void> {
    const generation = ++this.generation;
    this.loading = true;
    this.reloading = true;
    this.scroller.setAttribute('aria-busy', 'true');
    this.buffered.length = 0;
    this.loadMore.hidden = true;
    this.footer.textContent = 'Loading…';
    try {
      const page = await query('logs', { filter: this.filter, limit: PAGE_SIZE });
      if (generation !== this.generation) return;
      this.resetRows();
      this.append(page.entries);
      this.next = page.next;
      this.reloading = false;
      for (const e of this.buffered.splice(0)) this.addLive(e);
    } catch (err) {
      if (generation !== this.generation) return;
      this.resetRows();
      this.message(`Could not read the logs: ${(err as Error).message}`);
      this.onError((err as Error).message);
    } finally {
      if (generation === this.generation) {
        this.loading = false;
        this.reloading = false;
        this.scroller.setAttribute('aria-busy', 'false');
        this.updateFooter();
      }
    }
  }

  private async page(): Promise<void> {
    if (!this.next || this.loading) return;
    const generation = this.generation;
    this.loading = true;
    this.loadMore.disabled = true;
    try {
      const page = await query('logs', { filter: this.filter, limit: PAGE_SIZE, page: this.next });
      if (generation !== this.generation) return;
      this.append(page.entries);
      this.next = page.next;
    } catch (err) {
      if (generation === this.generation) this.onError((err as Error).message);
    } finally {
      if (generation === this.generation) {
        this.loading = false;
        this.loadMore.disabled = false;
        this.updateFooter();
      }
    }
  }

  /** A live log entry from /events. */
  addLive(entry: LogEntry): void {
    if (!matchesLogFilter(this.filter, entry)) return;
    if (this.reloading) {
      this.buffered.push(entry);
      return;
    }
    if (this.shown.has(entry.id)) return;
    // Usually newer than everything shown; find its place otherwise.
    let i = 0;
    while (i < this.ids.length && this.ids[i] > entry.id) i++;
    if (i === this.ids.length && this.next) return; // older than the loaded pages: paging finds it
    if (this.ids.length === 0) this.tbody.textContent = '';
    const row = this.row(entry);
    this.tbody.insertBefore(row, this.tbody.rows[i] ?? null);
    this.ids.splice(i, 0, entry.id);
    this.shown.add(entry.id);
    // Keep the rows in view steady when the user has scrolled down into older entries.
    if (this.scroller.scrollTop > 0) this.scroller.scrollTop += row.getBoundingClientRect().height;
    this.trim();
    this.updateFooter();
  }

  private trim(): void {
    if (this.ids.length <= MAX_ROWS) return;
    while (this.ids.length > MAX_ROWS) {
      const id = this.ids.pop()!;
      this.shown.delete(id);
      this.tbody.deleteRow(-1);
    }
    const lastRow = this.tbody.rows[this.tbody.rows.length - 1];
    this.next = { kind: 'before', id: this.ids[this.ids.length - 1], timestamp: lastRow.dataset.timestamp! };
  }

  private resetRows(): void {
    this.tbody.textContent = '';
    this.ids = [];
    this.shown.clear();
    this.next = undefined;
  }

  private append(entries: LogEntry[]): void {
    if (this.ids.length === 0 && entries.length) this.tbody.textContent = '';
    const frag = document.createDocumentFragment();
    for (const e of entries) {
      if (this.shown.has(e.id)) continue;
      this.shown.add(e.id);
      this.ids.push(e.id);
      frag.appendChild(this.row(e));
    }
    this.tbody.appendChild(frag);
    if (this.ids.length === 0) this.message(isLogFilterActive(this.filter) ? 'No log entries match the filter.' : 'No log entries yet.');
  }

  private message(text: string): void {
    replaceChildren(this.tbody, h('tr', { class: 'empty' }, h('td', { colspan: 5 }, text)));
  }

  private updateFooter(): void {
    const n = this.ids.length;
    this.footer.textContent = n === 0 ? '' : `${n} entr${n === 1 ? 'y' : 'ies'} shown${this.next ? '' : ' (all)'}`;
    this.loadMore.hidden = !this.next;
  }

  private row(e: LogEntry): HTMLTableRowElement {
    const message: Array<Node | string> = [h('span', { class: 'message' }, e.message)];
    if (e.details && Object.keys(e.details).length) {
      message.push(h('details', { class: 'entry-details' }, h('summary', {}, 'details'), h('pre', {}, JSON.stringify(e.details, null, 2))));
    }
    return h(
      'tr',
      { 'data-id': e.id, 'data-action': e.action, 'data-level': e.level, 'data-timestamp': e.timestamp, class: `level-${e.level}` },
      h('td', { class: 'col-time' }, h('time', { datetime: e.timestamp, title: formatDateTime(e.timestamp) }, formatClock(e.timestamp))),
      h('td', { class: 'col-level' }, icon(LEVEL_ICON[e.level] ?? 'circle-outline'), e.level),
      h('td', { class: 'col-action' }, e.action),
      h(
        'td',
        { class: 'col-item', title: e.itemId ?? '' },
        e.itemId ? h('button', { type: 'button', class: 'link-button item-link', 'data-item-id': e.itemId, title: `Show item ${e.itemId}: definition, attempts, output` }, e.itemId) : '',
      ),
      h('td', { class: 'col-message' }, ...message),
    );
  }
}

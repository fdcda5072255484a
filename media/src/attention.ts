// "Needs a look": the items running now (with their elapsed time) and those failed for good
// (newest first), each id a link to the item detail panel. Read again when the counters move.
import type { ItemSummary } from '../../src/shared/api';
import type { AttentionItems } from '../../src/shared/webviewProtocol';
import { h, replaceChildren } from './dom';
import { formatDuration, formatRelative } from './format';

export class AttentionView {
  readonly element: HTMLElement;
  private readonly running = h('div', { class: 'attention-list', 'data-list': 'running' });
  private readonly failed = h('div', { class: 'attention-list', 'data-list': 'failed' });
  private readonly runningTitle = h('h3', { id: 'attention-running' }, 'Running');
  private readonly failedTitle = h('h3', { id: 'attention-failed' }, 'Failed');

  constructor(onItem: (itemId: string) => void) {
    this.element = h(
      'section',
      { class: 'panel attention', 'aria-labelledby': 'attention-title' },
      h('h2', { id: 'attention-title' }, 'Items to look at'),
      h(
        'div',
        { class: 'attention-cols' },
        h('section', { 'aria-labelledby': 'attention-running' }, this.runningTitle, this.running),
        h('section', { 'aria-labelledby': 'attention-failed' }, this.failedTitle, this.failed),
      ),
    );
    this.element.addEventListener('click', (e) => {
      const link = (e.target as Element).closest<HTMLElement>('button.item-link');
      if (link?.dataset.itemId) onItem(link.dataset.itemId);
    });
    this.clear();
  }

  clear(): void {
    replaceChildren(this.running, h('p', { class: 'muted' }, '—'));
    replaceChildren(this.failed, h('p', { class: 'muted' }, '—'));
  }

  set(a: AttentionItems): void {
    replaceChildren(this.runningTitle, `Running (${a.running.total})`);
    replaceChildren(this.failedTitle, `Failed (${a.failed.total})`);
    this.fill(this.running, a.running, 'Nothing is running.', (i) =>
      h('span', { 'data-since': i.updatedAt, class: 'muted' }, formatDuration(Date.now() - Date.parse(i.updatedAt))),
    );
    this.fill(this.failed, a.failed, 'No failed items.', (i) => [
      h('span', { class: 'muted' }, `${i.attempts}/${i.maxAttempts} attempts, ${formatRelative(i.updatedAt)}`),
      i.lastError ? h('span', { class: 'attention-error' }, i.lastError) : null,
    ]);
  }

  private fill(list: HTMLElement, page: { items: ItemSummary[]; total: number }, empty: string, extra: (i: ItemSummary) => Node | (Node | null)[]): void {
    if (page.items.length === 0) {
      replaceChildren(list, h('p', { class: 'muted' }, empty));
      return;
    }
    const rows = page.items.map((i) => {
      const more = extra(i);
      return h(
        'li',
        { 'data-item-id': i.id },
        h('button', { type: 'button', class: 'link-button item-link', 'data-item-id': i.id, title: `Show item ${i.id}: definition, attempts, output` }, i.name || i.id),
        ...(Array.isArray(more) ? more : [more]),
      );
    });
    replaceChildren(list, h('ul', {}, ...rows), page.total > page.items.length ? h('p', { class: 'muted' }, `… and ${page.total - page.items.length} more`) : null);
  }
}

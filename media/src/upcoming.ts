// "Upcoming": the next occurrences of the schedule templates, soonest first, each with
// how long until it and the expression it comes from. Read again with the overview.
import type { UpcomingRun } from '../../src/shared/webviewProtocol';
import { h, replaceChildren } from './dom';
import { formatRelative } from './format';

export class UpcomingView {
  readonly element: HTMLElement;
  private readonly list = h('div', { class: 'attention-list', 'data-list': 'upcoming' });

  constructor() {
    this.element = h('section', { class: 'panel upcoming', 'aria-labelledby': 'upcoming-title' }, h('h2', { id: 'upcoming-title' }, 'Upcoming'), this.list);
    this.clear();
  }

  clear(): void {
    replaceChildren(this.list, h('p', { class: 'muted' }, '—'));
  }

  set(runs: UpcomingRun[]): void {
    if (runs.length === 0) {
      replaceChildren(this.list, h('p', { class: 'muted' }, 'No scheduled runs (no enabled schedule template).'));
      return;
    }
    const rows = runs.map((r) =>
      h(
        'li',
        { 'data-schedule-id': r.id },
        h('span', { class: 'upcoming-id' }, r.id),
        h('span', { title: new Date(r.at).toLocaleString() }, formatRelative(r.at)),
        h('span', { class: 'muted' }, `${r.schedule} (${r.timezone})`),
      ),
    );
    replaceChildren(this.list, h('ul', {}, ...rows));
  }
}

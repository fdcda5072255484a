// The CodeLens model of queue files: which item each entry is (the engine's
// own id rules), and what its lens says and offers for each state, in trusted and restricted mode.
import * as assert from 'node:assert/strict';
import type { ItemState, ItemSummary } from '../../src/shared/api';
import { parseItem } from '../../src/core/intake/items';
import { formatClock, formatRelativeTime } from '../../src/shared/format';
import { lensesFor, readQueueEntries, stateTitle, type LensContext, type QueueEntry } from '../../src/extension/queueLensModel';

const defaults = { timeoutMs: 600_000, maxAttempts: 3 };

/** The id the engine gives entry `index` of `value`, by the engine's own parser. */
function engineId(value: unknown, relPath: string, index: number): string | undefined {
  const r = parseItem(value, { workspaceFolder: '/ws', relPath, index, defaults });
  return r.ok ? r.item.id : undefined;
}

function summary(id: string, state: ItemState, extra: Partial<ItemSummary> = {}): ItemSummary {
  const outcome = state === 'launched' || state === 'failed' ? state : 'pending';
  return {
    id,
    name: id,
    outcome,
    phase: outcome === 'pending' ? (state === 'running' ? 'running' : 'waiting') : 'done',
    attempts: 1,
    maxAttempts: 3,
    nextAttemptAt: null,
    source: '.engine/queue/jobs.json',
    updatedAt: '2026-11-23T10:00:00.000Z',
    lastError: null,
    state,
    lastFinishedAt: null,
    ...extra,
  };
}

function context(items: ItemSummary[], extra: Partial<LensContext> = {}): LensContext {
  const byId = new Map(items.map((i) => [i.id, i]));
  return { item: (id) => byId.get(id), rejection: () => undefined, trusted: true, connected: true, now: Date.parse('2026-11-23T10:05:00.000Z'), ...extra };
}

describe('queue file CodeLens model', () => {
  it('names every entry of a .json array by its id or by the id the engine derives, at the entry', () => {
    const text = '[\n  { "id": "build", "command": "make" },\n  { "command": "echo", "args": ["[x]"] },\n  { "id": 7, "command": "bad" }\n]\n';
    const entries = readQueueEntries(text, '.engine/queue/jobs.json', false);
    const values = JSON.parse(text) as unknown[];
    assert.deepEqual(entries.map((e) => e.index), [0, 1, 2]);
    assert.equal(entries[0].id, 'build');
    assert.equal(entries[1].id, engineId(values[1], '.engine/queue/jobs.json', 1));
    assert.equal(entries[2].id, undefined, 'an id the engine cannot take names no item');
    assert.equal(text.slice(entries[1].start, entries[1].end), '{ "command": "echo", "args": ["[x]"] }');
  });

  it('takes a single object as entry 0 and each non-blank .jsonl line as the entry of its line number', () => {
    const single = readQueueEntries('\uFEFF{ "command": "date" }\n', '.engine/queue/one.json', false);
    assert.deepEqual(single.map((e) => [e.index, e.id]), [[0, engineId({ command: 'date' }, '.engine/queue/one.json', 0)]]);
    const lines = '{"id":"a","command":"x"}\n\n{"command":"y"}\nnot json\n';
    const entries = readQueueEntries(lines, '.engine/queue/l.jsonl', true);
    assert.deepEqual(entries.map((e) => [e.index, e.id]), [
      [0, 'a'],
      [2, engineId({ command: 'y' }, '.engine/queue/l.jsonl', 2)],
      [3, undefined],
    ]);
    assert.equal(lines.slice(entries[1].start, entries[1].end), '{"command":"y"}');
  });

  it('offers the actions that apply to each state, after a state lens with attempts and last finish', () => {
    const entries: QueueEntry[] = (['failed', 'running', 'held', 'launched', 'waiting'] as const).map((s, i) => ({ index: i, start: i * 10, end: i * 10 + 5, id: s }));
    const items = [
      summary('failed', 'failed', { attempts: 3, lastFinishedAt: '2026-11-23T10:02:00.000Z' }),
      summary('running', 'running'),
      summary('held', 'held', { attempts: 0 }),
      summary('launched', 'launched'),
      summary('waiting', 'waiting', { attempts: 0 }),
    ];
    const lenses = lensesFor(entries, context(items));
    const titlesAt = (start: number) => lenses.filter((l) => l.start === start).map((l) => l.title.replace(/^\$\([^)]+\) /, ''));
    assert.match(titlesAt(0)[0], /^failed · 3\/3 · 3 min\. ago$/);
    assert.deepEqual(titlesAt(0).slice(1), ['Show Output', 'Retry', 'Open in Terminal', 'Compare with Last Success']);
    assert.deepEqual(lenses.find((l) => l.title === 'Compare with Last Success')?.command, { id: 'engineMonitor.compareOutput', args: ['failed'] });
    assert.deepEqual(titlesAt(10), ['running · 1/3', 'Show Output', 'Cancel', 'Hold', 'Open in Terminal']);
    assert.deepEqual(titlesAt(20), ['held · 0/3', 'Cancel', 'Release']);
    assert.deepEqual(titlesAt(30), ['launched · 1/3', 'Show Output', 'Open in Terminal']);
    assert.deepEqual(titlesAt(40), ['waiting · 0/3', 'Cancel', 'Hold']);
    const cancel = lenses.find((l) => l.start === 10 && l.title === 'Cancel');
    assert.deepEqual(cancel?.command, { id: 'engineMonitor.cancelItem', args: ['running'] });
    assert.equal(lenses.find((l) => l.start === 0)?.command, undefined, 'the state lens is text');
  });

  it('says how long a service has been ready and how often it restarted, with Restart, Stop and Show Output', () => {
    const entries: QueueEntry[] = (['db', 'api', 'web', 'old'] as const).map((s, i) => ({ index: i, start: i * 10, end: i * 10 + 5, id: s }));
    const items = [
      // Ready 12 min (and some seconds) before `now` in context(), after one restart.
      summary('db', 'ready', { attempts: 2, service: { readyAt: '2026-11-23T09:52:30.000Z', restarts: 1 } }),
      summary('api', 'starting', { service: { readyAt: null, restarts: 0 } }),
      summary('web', 'failed', { attempts: 3, lastError: 'not ready within 60000 ms', service: { readyAt: null, restarts: 2 } }),
      summary('old', 'ready', { attempts: 4, service: { readyAt: '2026-11-23T07:00:00.000Z', restarts: 3 } }),
    ];
    const lenses = lensesFor(entries, context(items));
    const titlesAt = (start: number) => lenses.filter((l) => l.start === start).map((l) => l.title.replace(/^\$\([^)]+\) /, ''));
    assert.deepEqual(titlesAt(0), ['ready · 12 min · 1 restart', 'Restart', 'Stop', 'Show Output']);
    assert.deepEqual(titlesAt(10), ['starting', 'Restart', 'Stop', 'Show Output']);
    assert.deepEqual(titlesAt(20), ['stopped · failed: not ready within 60000 ms', 'Restart', 'Show Output']);
    assert.deepEqual(titlesAt(30), ['ready · 3 h 5 min · 3 restarts', 'Restart', 'Stop', 'Show Output']);
    assert.deepEqual(lenses.find((l) => l.start === 0 && l.title === 'Restart')?.command, { id: 'engineMonitor.restartItem', args: ['db'] });
    assert.deepEqual(lenses.find((l) => l.start === 0 && l.title === 'Stop')?.command, { id: 'engineMonitor.cancelItem', args: ['db'] });
  });

  it('shows the state only in restricted mode', () => {
    const entries: QueueEntry[] = [{ index: 0, start: 0, end: 1, id: 'f' }];
    const lenses = lensesFor(entries, context([summary('f', 'failed')], { trusted: false }));
    assert.equal(lenses.length, 1);
    assert.equal(lenses[0].command, undefined);
  });

  it('gives unknown entries a neutral lens: the rejection reason, not yet scanned, or no engine', () => {
    const entries: QueueEntry[] = [
      { index: 0, start: 0, end: 1, id: 'new' },
      { index: 1, start: 2, end: 3, id: undefined },
    ];
    const reasons = new Map([[1, 'unknown field "comand"\n(allowed: id, …)']]);
    const lenses = lensesFor(entries, context([], { rejection: (i) => reasons.get(i) }));
    assert.deepEqual(lenses.map((l) => l.title), ['$(circle-outline) not yet scanned', '$(warning) rejected: unknown field "comand" (allowed: id, …)']);
    const offline = lensesFor(entries.slice(0, 1), context([], { connected: false }));
    assert.equal(offline[0].title, '$(debug-disconnect) engine not connected');
  });

  it('tells a schedule template its next run and last outcome, with Hold (Release while held), instead of "not yet scanned"', () => {
    const entries: QueueEntry[] = [{ index: 0, start: 0, end: 1, id: 'nightly' }];
    const template = {
      id: 'nightly',
      schedule: '0 2 * * *',
      timezone: 'UTC',
      overlap: 'skip' as const,
      nextRunAt: '2026-11-29T02:00:00.000Z',
      lastRunAt: '2026-11-28T02:00:00.000Z',
      lastOutcome: 'launched' as const,
      enabled: true,
    };
    const lenses = lensesFor(entries, context([], { schedule: (id) => (id === 'nightly' ? template : undefined) }));
    assert.deepEqual(lenses.map((l) => l.title.replace(/ · last launched .*$/, ' · last launched …')), [`$(calendar) schedule · next ${formatClock(template.nextRunAt)} · last launched …`, 'Hold']);
    assert.match(lenses[0].title, /^\$\(calendar\) schedule · next .+ · last launched /);
    assert.deepEqual(lenses[1].command, { id: 'engineMonitor.holdItem', args: ['nightly'] });
    const held = lensesFor(entries, context([], { schedule: () => ({ ...template, enabled: false, nextRunAt: null, lastRunAt: null, lastOutcome: null }) }));
    assert.deepEqual(held.map((l) => l.title), ['$(calendar) schedule · held: no occurrence fires · not run yet', 'Release']);
  });

  it('says at the top of a draft that saving queues it, and keeps the states of the items it already holds', () => {
    const entries: QueueEntry[] = [
      { index: 0, start: 2, end: 10, id: 'build' },
      { index: 1, start: 12, end: 20, id: 'new' },
    ];
    const lenses = lensesFor(entries, context([summary('build', 'launched')], { draft: true }));
    assert.deepEqual(
      lenses.map((l) => [l.start, l.title, l.command?.id]),
      [
        [0, '$(edit) draft · save to queue (Ctrl+S)', 'workbench.action.files.save'],
        [2, '$(pass) launched · 1/3', undefined],
        [2, 'Show Output', 'engineMonitor.showOutput'],
        [2, 'Open in Terminal', 'engineMonitor.openInTerminal'],
      ],
      'no "not yet scanned" for an entry the engine is not going to scan',
    );
    assert.deepEqual(lensesFor([], context([], { draft: true })).map((l) => l.title), ['$(edit) draft · save to queue (Ctrl+S)'], 'an empty draft has the lens too');
    assert.ok(!lensesFor(entries, context([])).some((l) => l.title.includes('draft')), 'no draft lens once saved');
  });

  it('says how long ago the last attempt finished, and nothing when none has', () => {
    const now = Date.parse('2026-11-23T12:00:00.000Z');
    assert.equal(stateTitle(summary('x', 'waiting', { attempts: 0 }), now), '$(clock) waiting · 0/3');
    assert.match(stateTitle(summary('x', 'launched', { lastFinishedAt: '2026-11-23T09:00:00.000Z' }), now), / · 3 hr\. ago$/);
  });

  it('reads a 10,000-line .jsonl file into entries whose ids match the engine\'s', () => {
    const lines = Array.from({ length: 10_000 }, (_, i) => JSON.stringify(i % 2 ? { id: `job-${i}`, command: 'true' } : { command: 'echo', args: [String(i)] }));
    const entries = readQueueEntries(lines.join('\n') + '\n', '.engine/queue/big.jsonl', true);
    assert.equal(entries.length, 10_000);
    for (const i of [0, 1, 4242, 9999]) assert.equal(entries[i].id, engineId(JSON.parse(lines[i]), '.engine/queue/big.jsonl', i));
  });
});

describe('formatRelativeTime', () => {
  it('says minutes at the least, in the runtime locale', () => {
    const now = Date.parse('2026-11-23T12:00:00.000Z');
    const expect = (value: number, unit: Intl.RelativeTimeFormatUnit) => new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' }).format(value, unit);
    assert.equal(formatRelativeTime('2026-11-23T11:59:40.000Z', now), expect(0, 'minute'));
    assert.equal(formatRelativeTime('2026-11-23T11:57:00.000Z', now), expect(-3, 'minute'));
    assert.equal(formatRelativeTime('2026-11-21T11:00:00.000Z', now), expect(-2, 'day'));
    assert.equal(formatRelativeTime('not a date', now), 'not a date');
  });
});

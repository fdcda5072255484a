// Fast start: the scanner polls when the queue folder reports a change, not only at its interval.
// Real engine, real files, real processes. The poll interval here is a minute and every wait gives
// up long before it: what launches was found by a poll the change notification prompted. (The
// 50 ms figure is the bench's: npm run bench, BENCH_ONLY=fast-start.)
import assert from 'node:assert/strict';
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { allLogs, nodeItem, TempWorkspace, waitFor } from './support/workspace';

const POLL_INTERVAL_MS = 60_000;

describe('fast start: change notifications on the queue folder', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let engine: Engine;

  beforeEach(async () => {
    ws = new TempWorkspace('engine-fast-start-');
    engine = await Engine.create(ws.options({ pollIntervalMs: POLL_INTERVAL_MS }));
    await engine.start();
  });
  afterEach(async () => {
    await engine.shutdown(1000);
    ws.dispose();
  });

  /** Scans completed: a poll is counted when it starts, a scan when it is done. */
  const scans = () => engine.status().scanner.scans;
  const launchStarted = (id: string) => allLogs(engine).find((e) => e.action === 'launch_started' && e.itemId === id);

  it('a file renamed into an idle engine\'s queue folder is launched long before the next poll is due', async () => {
    const before = scans();
    const renamedAt = Date.now();
    ws.enqueue('now.json', nodeItem('now', '0'));
    const started = await waitFor('the item to launch', () => launchStarted('now'), POLL_INTERVAL_MS / 3);
    assert.ok(Date.parse(started.timestamp) - renamedAt < POLL_INTERVAL_MS / 3, `launched ${Date.parse(started.timestamp) - renamedAt} ms after the rename`);
    assert.ok(scans() > before, 'a poll the notification prompted found it');
    await waitFor('the item to succeed', () => engine.itemDetail('now')?.outcome === 'launched');
  });

  it('a file still being written in place is neither rejected nor launched until it is complete', async () => {
    // The first half arrives by a rename (one notification, its content already there), the rest
    // is appended in place, as a writer that does not rename would.
    const file = path.join(ws.queue, 'slow.jsonl');
    const whole = `${JSON.stringify(nodeItem('slow', '0', { name: 'written in two parts' }))}\n`;
    const before = scans();
    writeFileSync(`${file}.part`, whole.slice(0, 30));
    renameSync(`${file}.part`, file);
    await waitFor('a poll after the rename', () => scans() > before, POLL_INTERVAL_MS / 3);
    assert.equal(engine.itemDetail('slow'), undefined);
    assert.deepEqual(allLogs(engine).filter((e) => e.action === 'item_rejected'), [], 'half a line is not a mistake yet');
    appendFileSync(file, whole.slice(30));
    await waitFor('the completed item to launch', () => launchStarted('slow'), POLL_INTERVAL_MS / 3);
    assert.equal(engine.itemDetail('slow')?.item.name, 'written in two parts');
    assert.deepEqual(allLogs(engine).filter((e) => e.action === 'item_rejected'), []);
  });

  it('a draft a window holds is passed over by the prompted poll, and read once saved on purpose', async () => {
    const file = path.join(ws.queue, 'draft.json');
    engine.drafts.hold('window-1', [file], POLL_INTERVAL_MS);
    const before = scans();
    ws.enqueue('draft.json', nodeItem('draft', '0'));
    await waitFor('a poll after the change', () => scans() > before, POLL_INTERVAL_MS / 3);
    assert.equal(engine.itemDetail('draft'), undefined, 'held: not read');
    engine.drafts.ingest(file);
    await engine.pollNow();
    await waitFor('the saved draft to launch', () => launchStarted('draft'), POLL_INTERVAL_MS / 3);
  });
});

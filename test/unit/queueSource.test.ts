// The queue folder source on its own: a poll of unchanged files reads (and looks up) none of them,
// and every kind of change is still seen.
import * as assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { QueueDirectorySource } from '../../src/core/intake/queueSource';
import { TempWorkspace } from './support/workspace';

describe('queue folder source: reads only what changed', function () {
  this.timeout(30_000);
  let ws: TempWorkspace;
  let source: QueueDirectorySource;
  /** Fingerprints as the engine records them, and every file the source asked about. */
  const fingerprints = new Map<string, string>();
  let lookedUp: string[] = [];
  const item = (id: string) => JSON.stringify({ id, command: 'true' });

  async function poll(): Promise<string[]> {
    lookedUp = [];
    const scan = await source.scan((p) => {
      lookedUp.push(path.basename(p));
      return fingerprints.get(p);
    });
    assert.equal(scan.error, null);
    for (const file of scan.changed) fingerprints.set(file.absPath, file.fingerprint);
    return scan.changed.map((f) => path.basename(f.absPath)).sort();
  }

  /** Polls until `name` is reported changed (the watch event arrives asynchronously). */
  async function pollUntilChanged(name: string): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!(await poll()).includes(name)) {
      if (Date.now() > deadline) throw new Error(`${name} was not seen as changed within 5 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  beforeEach(() => {
    ws = new TempWorkspace('engine-source-');
    fingerprints.clear();
    source = new QueueDirectorySource(ws.folder, '.engine/queue', { timeoutMs: 1000, maxAttempts: 1 });
  });
  afterEach(() => {
    source.close();
    ws.dispose();
  });

  it('a poll of 500 unchanged files looks up none of them', async () => {
    for (let i = 0; i < 500; i++) writeFileSync(path.join(ws.queue, `f${i}.json`), item(`f${i}`));
    assert.equal((await poll()).length, 500);
    assert.deepEqual(await poll(), []);
    assert.deepEqual(lookedUp, [], 'nothing was statted and looked up again');
  });

  it('reports files in name order however many are read at once', async () => {
    const names = Array.from({ length: 100 }, (_, i) => `f${String(i).padStart(3, '0')}.json`);
    // Written in another order, some large, so reads finish out of order.
    for (const name of [...names].reverse()) writeFileSync(path.join(ws.queue, name), item(name) + ' '.repeat(name.endsWith('7.json') ? 200_000 : 0));
    const scan = await source.scan(() => undefined);
    assert.deepEqual(scan.changed.map((f) => path.basename(f.absPath)), names);
  });

  it('hands each file over before reading far ahead: a scan holds a few files, not the whole folder', async () => {
    const names = Array.from({ length: 100 }, (_, i) => `f${String(i).padStart(3, '0')}.json`);
    for (const name of names) writeFileSync(path.join(ws.queue, name), item(name));
    // The last file is deleted while the first is handed over: a scan that read every file before
    // handing any over would still hand it over.
    const taken: string[] = [];
    const error = await source.scanEach(
      () => undefined,
      (file) => {
        if (taken.length === 0) rmSync(path.join(ws.queue, names[99]));
        taken.push(path.basename(file.absPath));
        // Parsed, and its items whole, when handed over.
        assert.equal(file.entries.length, 1);
        assert.ok(file.entries[0].result.ok);
      },
    );
    assert.equal(error, null);
    assert.deepEqual(taken, names.slice(0, 99));
  });

  it('stops a scan when the taker says so', async () => {
    for (let i = 0; i < 40; i++) writeFileSync(path.join(ws.queue, `f${String(i).padStart(2, '0')}.json`), item(`f${i}`));
    const taken: string[] = [];
    await source.scanEach(
      () => undefined,
      async (file) => {
        taken.push(path.basename(file.absPath));
        return taken.length < 3;
      },
    );
    assert.deepEqual(taken, ['f00.json', 'f01.json', 'f02.json']);
  });

  it('sees a new file, a rename into place, an edit in place, and a replaced folder', async () => {
    writeFileSync(path.join(ws.queue, 'a.json'), item('a'));
    assert.deepEqual(await poll(), ['a.json']);
    await poll();

    writeFileSync(path.join(ws.queue, 'b.json.tmp'), item('b'));
    renameSync(path.join(ws.queue, 'b.json.tmp'), path.join(ws.queue, 'b.json'));
    await pollUntilChanged('b.json');

    appendFileSync(path.join(ws.queue, 'a.json'), '\n');
    await pollUntilChanged('a.json');
    assert.deepEqual(lookedUp, ['a.json'], 'only the edited file was looked up');

    // The folder deleted and made again: the watch follows the old one, so the source rescans.
    rmSync(ws.queue, { recursive: true });
    mkdirSync(ws.queue);
    writeFileSync(path.join(ws.queue, 'c.json'), item('c'));
    await pollUntilChanged('c.json');
  });

  it('without watching (a full scan every poll) the answer is the same', async () => {
    source.close();
    source = new QueueDirectorySource(ws.folder, '.engine/queue', { timeoutMs: 1000, maxAttempts: 1 }, 0);
    writeFileSync(path.join(ws.queue, 'a.json'), item('a'));
    assert.deepEqual(await poll(), ['a.json']);
    assert.deepEqual(await poll(), []);
    assert.deepEqual(lookedUp, ['a.json'], 'every poll looks at every file');
  });
});

// Drafts: queue files a VS Code window is still editing. The built engine host forked with an IPC
// channel, as the extension forks it; real files written in place as an editor's auto-save writes
// them; real launches. A held file is never read by a scan, an explicit save reads it once, a hold
// that is not renewed lapses, and an empty file is nothing at all.
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ItemDetail, ItemSummary, LogEntry } from '../../src/shared/api';
import type { ControlCommand, FromHostMessage } from '../../src/shared/hostProtocol';
import { allLogs, assertBuilt, CLI, getJson } from './support/cli';
import { nodeItem, TempWorkspace, waitFor } from './support/workspace';

type Reply = { ok: true; result?: unknown } | { ok: false; error: string };

describe('drafts: queue files held by an editor window', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  let child: ChildProcess | undefined;
  let url = '';
  let nextId = 0;

  beforeEach(() => {
    ws = new TempWorkspace('engine-drafts-');
  });
  afterEach(async () => {
    await stopHost();
    ws.dispose();
  });

  async function startHost(): Promise<void> {
    assertBuilt();
    child = fork(CLI, ['serve', '--workspace', ws.folder, '--storage', ws.storage, '--port', '0', '--poll-interval', '100', '--quiet'], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    url = await new Promise<string>((resolve, reject) => {
      child!.on('message', (m: FromHostMessage) => m.type === 'ready' && resolve(m.url));
      child!.once('exit', (code) => reject(new Error(`the host exited with ${code} before it was ready`)));
    });
  }

  async function stopHost(): Promise<void> {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    child = undefined;
  }

  function control(command: ControlCommand): Promise<Reply> {
    const requestId = ++nextId;
    return new Promise((resolve) => {
      const onMessage = (m: FromHostMessage) => {
        if (m.type !== 'controlResult' || m.requestId !== requestId) return;
        child!.off('message', onMessage);
        resolve(m.ok ? (m.result === undefined ? { ok: true } : { ok: true, result: m.result }) : { ok: false, error: m.error });
      };
      child!.on('message', onMessage);
      child!.send({ type: 'control', requestId, ...command });
    });
  }

  /** Writes in place, as an editor's save does (no temporary name, no rename). */
  function save(name: string, text: string): string {
    const file = path.join(ws.queue, name);
    writeFileSync(file, text);
    return file;
  }

  /** A poll that looks at every file and returns once it is done: whatever it would read, it has. */
  async function pollNow(): Promise<void> {
    assert.deepEqual(await control({ command: 'pollNow' }), { ok: true });
  }

  const item = async (id: string) => (await fetch(`${url}/items/${encodeURIComponent(id)}`)).status === 200;
  const logsAbout = async (file: string): Promise<LogEntry[]> => (await allLogs(url)).filter((e) => e.details?.file === `.engine/queue/${file}`);

  it('passes over a held file at every scan, reads it once at an explicit save, and launches it once', async () => {
    await startHost();
    const file = path.join(ws.queue, 'deploy.json');
    assert.deepEqual(await control({ command: 'holdDrafts', client: 'window-1', paths: [file] }), { ok: true });

    // What auto-save writes while `{"id":"deploy","command":"ec` is typed with quotes auto-closed:
    // valid JSON, and a command that must never run.
    save('deploy.json', JSON.stringify({ id: 'deploy', command: 'ec' }));
    await pollNow();
    save('deploy.json', JSON.stringify({ id: 'deploy', command: 'ech' }));
    await pollNow();
    assert.equal(await item('deploy'), false, 'no item from a held file');
    assert.deepEqual(await logsAbout('deploy.json'), [], 'no rejection, no log entry for a held file');

    save('deploy.json', JSON.stringify(nodeItem('deploy', 'console.log("deployed")', { maxAttempts: 1 })));
    assert.deepEqual(await control({ command: 'ingestDraft', path: file }), { ok: true });
    // ingestDraft answers after its poll: the item is there at once.
    assert.equal(await item('deploy'), true, 'the explicit save was read');
    const done = await waitFor('deploy to finish', async () => {
      const d = await getJson<ItemDetail>(`${url}/items/deploy`);
      return d.outcome !== 'pending' && d;
    });
    assert.deepEqual([done.outcome, done.attempts.length], ['launched', 1]);

    // Still open in the editor: what auto-save writes next is a draft again, not a redefinition.
    save('deploy.json', JSON.stringify({ id: 'deploy', command: 'rm' }));
    await pollNow();
    const logged = (await logsAbout('deploy.json')).map((e) => e.action);
    assert.deepEqual(logged, ['item_discovered'], 'one discovery, nothing read after it');
  });

  it('lets a hold lapse when its window stops renewing it, and then reads the file without being asked', async () => {
    await startHost();
    const file = save('lapse.json', '');
    const hold = () => control({ command: 'holdDrafts', client: 'window-2', paths: [file], forMs: 1500 });
    assert.deepEqual(await hold(), { ok: true });
    save('lapse.json', JSON.stringify(nodeItem('lapse', '0')));
    // Renewed for longer than one hold lasts: still held.
    const heldSince = Date.now();
    let lastRenewal = heldSince;
    while (Date.now() - heldSince < 3000) {
      await new Promise((r) => setTimeout(r, 250));
      await pollNow();
      assert.equal(await item('lapse'), false, 'a renewed hold keeps the file out');
      lastRenewal = Date.now();
      assert.deepEqual(await hold(), { ok: true });
    }
    // No longer renewed (the window died): the engine's own polls read it once the hold lapses,
    // although the folder's watch reported the write long ago.
    await waitFor('the lapsed draft to be read', () => item('lapse'), 15_000);
    assert.ok(Date.now() - lastRenewal >= 1400, 'not read before the hold lapsed');
  });

  it('lets go of a file when its window says so, and keeps other windows\' holds', async () => {
    const a = save('a.json', JSON.stringify(nodeItem('a', '0')));
    await startHost();
    const b = path.join(ws.queue, 'b.json');
    await control({ command: 'holdDrafts', client: 'window-a', paths: [a, b] });
    await control({ command: 'holdDrafts', client: 'window-b', paths: [b] });
    save('a.json', JSON.stringify(nodeItem('a2', '0')));
    save('b.json', JSON.stringify(nodeItem('b', '0')));
    await pollNow();
    assert.equal(await item('a'), true, 'written before the hold: read at start');
    assert.deepEqual([await item('a2'), await item('b')], [false, false]);

    // Window A closes its editors: a is read; b stays held by window B.
    await control({ command: 'holdDrafts', client: 'window-a', paths: [] });
    await waitFor('a.json to be read after its release', () => item('a2'));
    await pollNow();
    assert.equal(await item('b'), false, 'another window still holds b.json');
  });

  it('keeps holds across a restart of the engine, so its first scan does not read a draft', async () => {
    await startHost();
    const file = path.join(ws.queue, 'restart.json');
    await control({ command: 'holdDrafts', client: 'window-3', paths: [file] });
    await stopHost();
    save('restart.json', JSON.stringify(nodeItem('restart', '0')));
    await startHost();
    assert.equal(await item('restart'), false, 'the first scan (before the server answered) passed over the draft');
    await control({ command: 'holdDrafts', client: 'window-3', paths: [] });
    await waitFor('the released draft to be read', () => item('restart'));
  });

  it('takes an empty or blank queue file for nothing: no item, no rejection, no log entry, until it has content', async () => {
    save('empty.json', '');
    save('blank.json', ' \n\t\n');
    save('blank.jsonl', '\n\n');
    await startHost();
    await pollNow();
    for (const name of ['empty.json', 'blank.json', 'blank.jsonl']) assert.deepEqual(await logsAbout(name), [], name);
    const status = await getJson<{ scanner: { itemsRejected: number } }>(`${url}/status`);
    assert.equal(status.scanner.itemsRejected, 0);

    save('empty.json', JSON.stringify(nodeItem('typed', '0')));
    await waitFor('the file with content to be read', () => item('typed'));
    const items = (await getJson<{ items: ItemSummary[] }>(`${url}/items`)).items.map((i) => i.id);
    assert.deepEqual(items, ['typed']);
  });

  it('refuses a hold it cannot use, saying what it needs', async () => {
    await startHost();
    assert.deepEqual(await control({ command: 'holdDrafts', client: 'w', paths: ['relative.json'] }), {
      ok: false,
      error: 'holdDrafts needs "paths": an array of absolute file paths (empty to hold none)',
    });
    assert.deepEqual(await control({ command: 'ingestDraft', path: '' }), { ok: false, error: 'ingestDraft needs "path": the absolute path of the queue file' });
  });
});

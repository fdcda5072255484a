// What a queue file can reach: the queue folder, links and `cwd` are judged by their real paths,
// and a rejection never quotes the file's contents (they may be secrets read from elsewhere).
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Engine } from '../../src/core/kernel/engine';
import { isInside } from '../../src/core/intake/items';
import { allLogs, nodeItem, settled, TempWorkspace } from './support/workspace';

describe('confinement: queue folder, links and cwd by real path', function () {
  this.timeout(30_000);
  let ws: TempWorkspace;
  let outside: string;
  let engine: Engine | undefined;
  beforeEach(() => {
    ws = new TempWorkspace('engine-confine-');
    outside = mkdtempSync(path.join(os.tmpdir(), 'engine-outside-'));
  });
  afterEach(async () => {
    await engine?.shutdown(0);
    engine = undefined;
    ws.dispose();
    rmSync(outside, { recursive: true, force: true });
  });

  const rejections = (e: Engine) => allLogs(e).filter((x) => x.action === 'item_rejected').map((x) => `${String(x.details!.file)}: ${String(x.details!.reason)}`);

  it('refuses a queue folder that is a link out of the workspace, reads none of its files and quotes nothing', async () => {
    writeFileSync(path.join(outside, 'secret.json'), 'AWS_SECRET=abc123');
    writeFileSync(path.join(outside, 'run.json'), JSON.stringify(nodeItem('outside-item', '0')));
    rmSync(ws.queue, { recursive: true });
    symlinkSync(outside, ws.queue);
    engine = await Engine.create(ws.options({ initialMode: 'restricted' }));
    await engine.start();
    assert.equal(engine.stats().total, 0, 'no item from outside is known');
    const text = JSON.stringify(allLogs(engine)) + JSON.stringify(engine.status());
    assert.doesNotMatch(text, /abc123/);
    assert.match(JSON.stringify(engine.status()), /resolves outside the workspace/);
  });

  it('reads a queue folder outside the workspace when it was named so on purpose', async () => {
    writeFileSync(path.join(outside, 'run.json'), JSON.stringify(nodeItem('outside-item', '0')));
    engine = await Engine.create(ws.options({ queueDirectory: path.relative(ws.folder, outside) }));
    await engine.start();
    assert.equal(engine.stats().total, 1);
  });

  it('never quotes file contents in a JSON error', async () => {
    ws.enqueue('secret.json', 'AWS_SECRET=abc123');
    ws.enqueue('lines.jsonl', '{"id":"ok","command":"true"}\nTOKEN=hunter2\n');
    ws.enqueue('array.json', '[1, "x"]');
    engine = await Engine.create(ws.options({ initialMode: 'restricted' }));
    await engine.start();
    const reasons = rejections(engine);
    assert.equal(reasons.length, 4, reasons.join('\n'));
    assert.doesNotMatch(reasons.join('\n'), /abc123|AWS_SECRET|hunter2|TOKEN/);
    assert.ok(reasons.some((r) => /secret\.json: not valid JSON: Unexpected character/.test(r)), reasons.join('\n'));
    assert.ok(reasons.some((r) => /lines\.jsonl: line 2 is not valid JSON/.test(r)), reasons.join('\n'));
    // A non-object entry is named as such, not as a complaint about args and shell.
    assert.ok(reasons.some((r) => /array\.json: an item must be a JSON object with at least "command"; got a number/.test(r)), reasons.join('\n'));
    assert.ok(reasons.some((r) => /array\.json: an item must be a JSON object with at least "command"; got a string/.test(r)), reasons.join('\n'));
  });

  it('rejects a cwd that leads out through a link, and accepts a real folder named ..foo', async () => {
    symlinkSync(outside, path.join(ws.folder, 'lnk'));
    mkdirSync(path.join(ws.folder, '..foo'));
    ws.enqueue('a.json', [
      nodeItem('via-link', 'require("fs").writeFileSync("ran", "")', { cwd: 'lnk' }),
      nodeItem('dotdot', 'require("fs").writeFileSync("ran", "")', { cwd: '..foo' }),
    ]);
    engine = await Engine.create(ws.options());
    await engine.start();
    await settled(engine);
    const reasons = rejections(engine);
    assert.equal(reasons.length, 1, reasons.join('\n'));
    assert.match(reasons[0], /cwd "lnk" leads outside the workspace folder \(to .*\) through a link/);
    assert.equal(engine.stats().launched, 1);
    assert.equal(engine.listItems({ limit: 10, offset: 0 }).items.find((i) => i.id === 'dotdot')?.outcome, 'launched');
  });

  it('judges inside and outside by path segments, not by spelling', () => {
    const root = path.join(path.sep, 'w');
    assert.equal(isInside(root, path.join(root, '..foo')), true);
    assert.equal(isInside(root, path.join(root, 'a', '..', 'b')), true);
    assert.equal(isInside(root, root), true);
    assert.equal(isInside(root, path.join(root, '..')), false);
    assert.equal(isInside(root, path.join(root, '..', 'x')), false);
    assert.equal(isInside(root, path.join(path.sep, 'wx')), false);
  });
});

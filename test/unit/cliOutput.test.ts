// What `serve` prints for people: one line per log entry, whatever an item's name holds.
import * as assert from 'node:assert/strict';
import { runCli } from './support/cli';
import { TempWorkspace, waitFor } from './support/workspace';

describe('CLI: its log output cannot be forged', function () {
  this.timeout(30_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-cli-out-')));
  afterEach(() => ws.dispose());

  it('prints an item name with a newline, ANSI escapes and a bell as escapes, on one line', async () => {
    const forged = '2026-01-01T00:00:00.000Z info  launch_succeeded   "deploy" succeeded';
    ws.enqueue('evil.json', { id: 'evil', name: `x\n${forged}\u001b[2J\u0007`, command: process.execPath, args: ['-e', '0'] });
    const run = runCli(['serve', '--workspace', ws.folder, '--storage', ws.storage, '--port', '0']);
    try {
      await waitFor('the launch to be logged', () => /launch_succeeded/.test(run.stdout()), 20_000);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    const out = run.stdout();
    assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f]/.test(out), 'no control character but the line breaks');
    const lines = out.split('\n');
    assert.ok(!lines.some((l) => l.startsWith(forged)), 'no line is the forged one');
    const discovered = lines.filter((l) => /item_discovered/.test(l));
    assert.equal(discovered.length, 1);
    assert.match(discovered[0], /x\\n2026-01-01T00:00:00\.000Z info {2}launch_succeeded {3}"deploy" succeeded\\u001b\[2J\\u0007/);
  });
});

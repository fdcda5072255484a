// `engine-monitor serve` when starting fails part-way: nothing it started may keep running (no
// server still listening, no launch helper), the storage folder is left for the next start, and
// the exit code and message say what failed and what to do.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { processesMentioning, runCli, serve } from './support/cli';
import { TempWorkspace } from './support/workspace';

describe('CLI: a start-up failure after the server started', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-startup-')));
  afterEach(() => ws.dispose());

  it('with a folder named endpoint.json in the way: exits 1 naming the file and the fix, leaves nothing running, and the next start works', async () => {
    const inTheWay = path.join(ws.storage, 'endpoint.json');
    mkdirSync(inTheWay, { recursive: true });
    const run = runCli(['serve', '--port', '0', '--quiet', '--workspace', ws.folder, '--storage', ws.storage]);
    const pid = run.child.pid!;
    // Before the fix the process stayed up, listening, forever: the timeout turns that into a failure.
    const exited = await Promise.race([run.exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 30_000).unref())]);
    if (exited === 'running') {
      run.child.kill('SIGKILL');
      assert.fail(`the half-started engine kept running:\n${run.stdout()}\n${run.stderr()}`);
    }
    assert.equal(exited.code, 1);
    assert.doesNotMatch(run.stdout(), /listening on/, 'it never said it was ready');
    assert.match(run.stderr(), new RegExp(`could not write ${inTheWay.replace(/[.]/g, '\\.')}: EISDIR.*a folder is in the way: remove it`));
    assert.match(run.stderr(), /the engine did not start and nothing is left running/);
    assert.deepEqual(processesMentioning(`--engine-pid=${pid}`), [], 'its launch helper was ended with it');

    rmSync(inTheWay, { recursive: true });
    const again = await serve(['--workspace', ws.folder, '--storage', ws.storage]);
    again.child.kill('SIGTERM');
    assert.equal((await again.exited).code, 0);
  });
});

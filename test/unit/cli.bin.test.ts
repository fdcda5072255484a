// The package's bin (`engine-monitor`, dist/cli.js run as a program) starts the engine with the
// Node settings the extension gives its engine host, so a user gets the fast engine by default.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { ENGINE_HOST_NODE_OPTIONS } from '../../src/shared/hostProtocol';
import { assertBuilt, CLI } from './support/cli';
import { TempWorkspace, waitFor } from './support/workspace';

describe('CLI: the bin starts the engine with its Node settings', function () {
  this.timeout(60_000);
  let ws: TempWorkspace;
  beforeEach(() => (ws = new TempWorkspace('engine-bin-')));
  afterEach(() => ws.dispose());

  it('./dist/cli.js serve runs Node with the engine host\'s options, through its #! line', async () => {
    assertBuilt();
    assert.equal(readFileSync(CLI, 'utf8').split('\n', 1)[0], `#!/usr/bin/env -S node ${ENGINE_HOST_NODE_OPTIONS.join(' ')}`);
    const child = spawn(CLI, ['serve', '--workspace', ws.folder, '--storage', ws.storage, '--port', '0', '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await waitFor(`the ready line (stderr: ${err})`, () => /^listening on http:\/\/\S+$/m.test(out), 30_000);
      // env replaced itself with node: the process started is the engine, with the options before the script.
      const argv = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const script = argv.findIndex((a) => a.endsWith('cli.js'));
      assert.ok(script > 0, argv.join(' '));
      assert.deepEqual(argv.slice(1, script), [...ENGINE_HOST_NODE_OPTIONS]);
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
});

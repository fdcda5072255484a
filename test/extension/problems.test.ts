// Problem matchers in the Problems panel: an item running the project's own tsc on a
// broken file fails, and its `$tsc` problems are diagnostics with the item's name as source at the
// right line and column; after the file is fixed and the item retried, the successful attempt
// clears them. The engine is this window's own, real one; tsc is real. A remote engine's paths
// (a headless engine on a checkout elsewhere) map to the same files in this window's folder.
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { AttemptDiagnostics } from '../../src/extension/attemptDiagnostics';
import { EngineClient } from '../../src/extension/engineClient';
import { addItem, EXTENSION_ID, getApi, itemDetail, nodeById, showViews, waitFor, waitForEngine } from './helpers';

// dist/test/extension/index.js → the repository's node_modules.
const TSC = path.resolve(__dirname, '../../../node_modules/typescript/bin/tsc');
const BROKEN = [
  'export function total(prices: number[]): number {',
  '  let sum: number = 0;',
  '  for (const p of prices) sum += p;',
  '  const label: string = sum;',
  '  return label.length;',
  '}',
  '',
].join('\n');

describe('Problem matcher diagnostics', function () {
  this.timeout(180_000);

  it('shows a failed item\'s $tsc problem with the item\'s name as source, and clears it once a retry succeeds', async () => {
    const api = await getApi();
    await waitForEngine(api);
    await showViews(api);
    const folder = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const file = path.join(folder, 'typecheck-demo', 'src', 'total.ts');
    const uri = vscode.Uri.file(file);
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, BROKEN);
    const id = 'problems-typecheck';
    await addItem({
      id,
      name: 'Typecheck total.ts',
      command: process.execPath,
      args: [TSC, '--noEmit', '--strict', '--target', 'ES2022', 'src/total.ts'],
      cwd: 'typecheck-demo',
      maxAttempts: 1,
      problemMatcher: '$tsc',
    });

    const [d] = await waitFor(
      'the $tsc problem in the Problems panel',
      () => {
        const found = vscode.languages.getDiagnostics(uri).filter((x) => x.source === 'Typecheck total.ts');
        return found.length > 0 && found;
      },
      120_000,
    );
    assert.equal(vscode.languages.getDiagnostics(uri).filter((x) => x.source === 'Typecheck total.ts').length, 1);
    assert.equal(d.message, "Type 'number' is not assignable to type 'string'.");
    assert.equal(d.code, '2322');
    assert.equal(d.severity, vscode.DiagnosticSeverity.Error);
    // tsc's (4,9): line 4, column 9, 1-based; VS Code's positions are 0-based.
    assert.deepEqual([d.range.start.line, d.range.start.character], [3, 8]);
    const detail = await itemDetail(id);
    assert.equal(detail.outcome, 'failed');
    assert.deepEqual(detail.attempts[0].problems.map((p) => [p.file, p.line, p.column]), [[file, 4, 9]]);

    await fs.writeFile(file, BROKEN.replace('const label: string = sum;', 'const label: string = String(sum);'));
    const node = await waitFor('the failed item in the Items view', () => nodeById(api, 'items', `items.failed.${id}`));
    await vscode.commands.executeCommand('engineMonitor.retryItem', node);
    await waitFor('the retried item to launch', async () => (await itemDetail(id)).outcome === 'launched', 120_000);
    await waitFor('the problem to clear', () => vscode.languages.getDiagnostics(uri).every((x) => x.source !== 'Typecheck total.ts'));
    assert.deepEqual(api._testing.attemptDiagnostics.items(), [], 'nothing shown for the item any more');
  });
});

describe('Problem matcher diagnostics from a remote engine', function () {
  this.timeout(120_000);

  it('maps the engine\'s path to the same file under this window\'s workspace folder', async () => {
    // The engine's checkout lives elsewhere; this window has the same project at its folder.
    const local = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, 'remote-lint', 'src', 'job.c');
    await fs.mkdir(path.dirname(local), { recursive: true });
    await fs.writeFile(local, 'int main(void) { return 0 }\n');
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'engine-monitor-remote-problems-'));
    const checkout = path.join(dir, 'checkout');
    await fs.mkdir(path.join(checkout, '.engine', 'queue'), { recursive: true });
    // Its working folder only: the file the output names must not exist on this machine at the
    // engine's path, as on another machine.
    await fs.mkdir(path.join(checkout, 'remote-lint'), { recursive: true });
    const item = {
      id: 'remote-lint',
      name: 'Remote lint',
      command: process.execPath,
      args: ['-e', "console.error(\"src/job.c:1:27: error: expected ';' before '}' token\"); process.exitCode = 1"],
      cwd: 'remote-lint',
      maxAttempts: 1,
      problemMatcher: '$gcc',
    };
    await fs.writeFile(path.join(checkout, '.engine', 'queue', 'remote.json'), JSON.stringify(item));
    const cli = path.join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'dist', 'cli.js');
    const child = spawn(process.execPath, [cli, 'serve', '--workspace', checkout, '--storage', path.join(dir, 'state'), '--port', '0', '--poll-interval', '300', '--quiet'], {
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const client = new EngineClient();
    const diagnostics = new AttemptDiagnostics(client);
    try {
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      const url = await waitFor('the headless engine to listen', () => /^listening on (http:\/\/\S+)$/m.exec(out)?.[1], 30_000);
      client.setEndpoint(url, undefined);
      const [d] = await waitFor('the remote problem on the local file', () => {
        const found = diagnostics.collection.get(vscode.Uri.file(local));
        return found && found.length > 0 && found;
      }, 60_000);
      assert.equal(d.source, 'Remote lint');
      assert.equal(d.message, "expected ';' before '}' token");
      assert.deepEqual([d.range.start.line, d.range.start.character], [0, 26]);
      const remotePath = path.join(checkout, 'remote-lint', 'src', 'job.c');
      const detail = await (await fetch(`${url}/items/remote-lint`)).json() as { attempts: { problems: { file: string }[] }[] };
      assert.equal(detail.attempts[0].problems[0].file, remotePath, 'the engine names its own path');
      assert.deepEqual(diagnostics.collection.get(vscode.Uri.file(remotePath)) ?? [], [], 'shown at the local file only');
    } finally {
      diagnostics.dispose();
      client.dispose();
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
      await fs.rm(dir, { recursive: true, force: true });
      await fs.rm(path.dirname(path.dirname(local)), { recursive: true, force: true });
    }
  });
});

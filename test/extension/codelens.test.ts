// CodeLens on queue files and Open Attempt in Terminal, in the real editor with
// this window's real engine: lenses on a .json array and a .jsonl file say what the engine says
// about each entry's item; a lens's Cancel ends a running attempt; Open Attempt in Terminal opens
// a terminal in the item's cwd with its env and the command typed, which, run, does what the
// engine's attempt did.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { getApi, itemDetail, waitFor, waitForEngine } from './helpers';

const FAR = '2099-01-01T00:00:00.000Z';

async function lensesOf(uri: vscode.Uri): Promise<{ line: number; titles: string[]; lenses: vscode.CodeLens[] }[]> {
  const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri)) ?? [];
  const byLine = new Map<number, vscode.CodeLens[]>();
  for (const l of lenses) byLine.set(l.range.start.line, [...(byLine.get(l.range.start.line) ?? []), l]);
  return [...byLine].sort(([a], [b]) => a - b).map(([line, ls]) => ({ line, lenses: ls, titles: ls.map((l) => (l.command?.title ?? '').replace(/^\$\([^)]+\) /, '')) }));
}

describe('Queue-file CodeLens', function () {
  this.timeout(120_000);
  const queue = () => path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue');

  it('shows each entry\'s state on a .json array and a .jsonl file, and Cancel from a lens ends a running item', async () => {
    const api = await getApi();
    await waitForEngine(api);
    const arrayFile = path.join(queue(), 'lens-array.json');
    const linesFile = path.join(queue(), 'lens-lines.jsonl');
    const array = [
      '[',
      '  { "id": "lens-ok", "command": "node", "args": ["-e", "0"] },',
      '  { "id": "lens-bad", "command": "node", "args": ["-e", "process.exit(3)"], "maxAttempts": 1 },',
      `  { "id": "lens-later", "command": "node", "args": ["-e", "0"], "runAt": "${FAR}" }`,
      ']',
      '',
    ].join('\n');
    const lines = [
      '{"id":"lens-sleep","command":"node","args":["-e","setTimeout(() => {}, 120000)"]}',
      '',
      `{"command":"node","args":["-e","0"],"runAt":"${FAR}"}`,
      '',
    ].join('\n');
    await fs.writeFile(arrayFile, array);
    await fs.writeFile(linesFile, lines);
    const arrayDoc = await vscode.workspace.openTextDocument(arrayFile);
    await vscode.window.showTextDocument(arrayDoc);
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    await waitFor('lens-ok to launch, lens-bad to fail, lens-sleep to run', async () =>
      (await itemDetail('lens-ok')).state === 'launched' && (await itemDetail('lens-bad')).state === 'failed' && (await itemDetail('lens-sleep')).state === 'running');
    await vscode.commands.executeCommand('engineMonitor.holdItem', 'lens-later');

    const arrayLenses = await waitFor('the array file\'s lenses to show the engine\'s states', async () => {
      const got = await lensesOf(arrayDoc.uri);
      return got.length === 3 && got[2].titles[0].startsWith('held') && got;
    });
    assert.deepEqual(arrayLenses.map((l) => l.line), [1, 2, 3], 'one lens line above each entry');
    assert.match(arrayLenses[0].titles[0], /^launched · 1\/3 · /);
    assert.deepEqual(arrayLenses[0].titles.slice(1), ['Show Output', 'Open in Terminal']);
    assert.match(arrayLenses[1].titles[0], /^failed · 1\/1 · /);
    assert.deepEqual(arrayLenses[1].titles.slice(1), ['Show Output', 'Retry', 'Open in Terminal', 'Compare with Last Success']);
    assert.deepEqual(arrayLenses[2].titles, ['held · 0/3', 'Cancel', 'Release']);

    const linesDoc = await vscode.workspace.openTextDocument(linesFile);
    await vscode.window.showTextDocument(linesDoc);
    const lineLenses = await waitFor('the .jsonl file\'s lenses', async () => {
      const got = await lensesOf(linesDoc.uri);
      return got.length === 2 && got[0].titles[0].startsWith('running') && got;
    });
    assert.deepEqual(lineLenses.map((l) => l.line), [0, 2], 'blank lines are no entry');
    assert.match(lineLenses[1].titles[0], /^scheduled · 0\/3$/, 'the derived id of line 2 is the engine\'s');

    const cancel = lineLenses[0].lenses.find((l) => l.command?.title === 'Cancel');
    assert.ok(cancel?.command, `a Cancel lens on the running item: ${lineLenses[0].titles.join(', ')}`);
    await vscode.commands.executeCommand(cancel.command.command, ...(cancel.command.arguments ?? []));
    const cancelled = await waitFor('lens-sleep to be cancelled', async () => {
      const d = await itemDetail('lens-sleep');
      return d.state === 'failed' && d;
    });
    assert.equal(cancelled.error, 'cancelled');
    await waitFor('the lens to say failed', async () => (await lensesOf(linesDoc.uri))[0]?.titles[0].startsWith('failed'));

    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await fs.rm(arrayFile);
    await fs.rm(linesFile);
  });

  it('Open Attempt in Terminal: the item\'s cwd and env, the command typed (not run) with its quoting intact', async () => {
    const api = await getApi();
    await waitForEngine(api);
    const root = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const sub = path.join(root, 'lens term dir');
    await fs.mkdir(sub, { recursive: true });
    // The program writes what it was given; the args are the kind a naive join would break.
    const script = "require('fs').writeFileSync('repro.json', JSON.stringify({ argv: process.argv.slice(1), cwd: process.cwd(), item: process.env.ENGINE_ITEM_ID, attempt: process.env.ENGINE_ATTEMPT, mine: process.env.LENS_MINE }))";
    const args = ['-e', script, 'a b', "it's", '$HOME', '"q"'];
    const file = path.join(queue(), 'lens-term.json');
    await fs.writeFile(file, JSON.stringify({ id: 'lens-term', command: 'node', args, cwd: 'lens term dir', env: { LENS_MINE: 'x y' } }));
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    await waitFor('lens-term to launch', async () => (await itemDetail('lens-term')).state === 'launched');
    const out = path.join(sub, 'repro.json');
    const byEngine = JSON.parse(await fs.readFile(out, 'utf8')) as Record<string, unknown>;
    await fs.rm(out);

    const terminal = await vscode.commands.executeCommand<vscode.Terminal>('engineMonitor.openInTerminal', 'lens-term');
    assert.ok(terminal, 'a terminal');
    const options = terminal.creationOptions as vscode.TerminalOptions;
    assert.equal(options.cwd, sub);
    assert.equal(options.env?.ENGINE_ITEM_ID, 'lens-term');
    assert.equal(options.env?.ENGINE_ATTEMPT, '1');
    assert.equal(options.env?.LENS_MINE, 'x y');
    // Typed, not run: nothing happens until the user presses Enter, which the test does now.
    await assert.rejects(fs.stat(out), 'the command is typed, not run');
    terminal.sendText('', true);
    const byTerminal = JSON.parse(await waitFor('the typed command to run', () => fs.readFile(out, 'utf8').catch(() => undefined), 60_000)) as Record<string, unknown>;
    assert.deepEqual(byTerminal, byEngine, 'the typed command does what the engine\'s attempt did');
    assert.deepEqual(byTerminal.argv, args.slice(2));
    terminal.dispose();
    await fs.rm(file);
    await fs.rm(sub, { recursive: true });
  });
});

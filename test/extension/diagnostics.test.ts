// Rejected queue-file entries in the Problems panel: the engine's item_rejected log
// entry becomes a diagnostic at the rejected entry's field, source "Engine Monitor", with the
// engine's reason; writing the corrected file clears it. The engine is this window's own, real one.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { QueueDiagnostics } from '../../src/extension/diagnostics';
import { getApi, itemDetail, waitFor, waitForEngine } from './helpers';

describe('Queue-file diagnostics', function () {
  this.timeout(90_000);

  it('shows a rejected entry in the Problems panel at its unknown field, and clears it when the file is fixed', async () => {
    const api = await getApi();
    await waitForEngine(api);
    const file = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue', 'diag-typo.json');
    const uri = vscode.Uri.file(file);
    const broken = [
      '[',
      '  { "id": "diag-first", "command": "node", "args": ["-e", "0"], "runAt": "2099-01-01T00:00:00.000Z" },',
      '  { "id": "diag-second", "comand": "node", "runAt": "2099-01-01T00:00:00.000Z" }',
      ']',
      '',
    ].join('\n');
    await fs.writeFile(file, broken);
    await vscode.commands.executeCommand('engineMonitor.pollNow');

    const diagnostics = await waitFor('a diagnostic on diag-typo.json', () => {
      const d = vscode.languages.getDiagnostics(uri);
      return d.length > 0 && d;
    });
    assert.equal(diagnostics.length, 1, `one rejected entry, one diagnostic: ${JSON.stringify(diagnostics.map((d) => d.message))}`);
    const [d] = diagnostics;
    assert.equal(d.source, 'Engine Monitor');
    assert.match(d.message, /unknown field "comand"/);
    assert.match(d.message, /missing required field "command"/);
    // The range is the second entry's "comand" key: line 2 (0-based), where it is in the text.
    const line = broken.split('\n')[2];
    assert.equal(d.range.start.line, 2);
    assert.equal(d.range.start.character, line.indexOf('"comand"'));
    assert.equal(d.range.end.character, line.indexOf('"comand"') + '"comand"'.length);
    // The first entry was fine: the engine took it.
    assert.equal((await itemDetail('diag-first')).item?.id, 'diag-first');

    await fs.writeFile(file, broken.replace('"comand"', '"command"'));
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    await waitFor('the diagnostic to clear', () => vscode.languages.getDiagnostics(uri).length === 0);
    await waitFor('diag-second to be accepted', async () => (await itemDetail('diag-second')).item?.id === 'diag-second');
    assert.deepEqual(vscode.languages.getDiagnostics(uri), [], 'the accepted file stays clean');
    await fs.rm(file);
  });

  it('points at each dependsOn of a dependency cycle and at a repeated id, and clears both when the file is fixed', async () => {
    const api = await getApi();
    await waitForEngine(api);
    const file = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue', 'diag-cycle.json');
    const uri = vscode.Uri.file(file);
    // Due in 2099: nothing here runs, whatever the fix makes of it.
    const later = '"runAt": "2099-01-01T00:00:00.000Z"';
    const broken = [
      '[',
      `  { "id": "diag-build", "command": "node", "dependsOn": ["diag-test"], ${later} },`,
      `  { "id": "diag-test", "command": "node", "dependsOn": ["diag-build"], ${later} },`,
      `  { "id": "diag-build", "command": "node", "args": ["-e", "1"], ${later} }`,
      ']',
      '',
    ].join('\n');
    await fs.writeFile(file, broken);
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    const diagnostics = await waitFor('three diagnostics on diag-cycle.json', () => {
      const d = vscode.languages.getDiagnostics(uri);
      return d.length === 3 && [...d].sort((a, b) => a.range.start.line - b.range.start.line);
    });
    const lines = broken.split('\n');
    for (const [i, d] of diagnostics.slice(0, 2).entries()) {
      assert.equal(d.source, 'Engine Monitor');
      assert.match(d.message, /dependency cycle: diag-(build|test) → diag-(test|build) → diag-(build|test)/);
      assert.equal(d.range.start.line, i + 1);
      assert.equal(d.range.start.character, lines[i + 1].indexOf('"dependsOn"'), 'at the entry\'s dependsOn');
    }
    const repeated = diagnostics[2];
    assert.match(repeated.message, /id "diag-build" is already used by entry 0 of this file/);
    assert.equal(repeated.range.start.line, 3);
    assert.equal(repeated.range.start.character, lines[3].indexOf('"id"'), 'at the repeated id');

    await fs.writeFile(file, broken.replace(', "dependsOn": ["diag-build"]', '').replace('"id": "diag-build", "command": "node", "args"', '"id": "diag-lint", "command": "node", "args"'));
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    await waitFor('the diagnostics to clear', () => vscode.languages.getDiagnostics(uri).length === 0);
    await waitFor('diag-lint to be accepted', async () => (await itemDetail('diag-lint')).item?.id === 'diag-lint');
    await fs.rm(file);
  });

  it('points at the field a .jsonl line was rejected for, and a window reload reads the rejection back from /logs', async () => {
    const api = await getApi();
    await waitForEngine(api);
    const file = path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, '.engine', 'queue', 'diag-cwd.jsonl');
    const uri = vscode.Uri.file(file);
    const text = '{"id":"diag-inside","command":"node","runAt":"2099-01-01T00:00:00.000Z"}\n\n{"id":"diag-outside","command":"node","cwd":"../..","runAt":"2099-01-01T00:00:00.000Z"}\n';
    await fs.writeFile(file, text);
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    const [live] = await waitFor('a diagnostic on diag-cwd.jsonl', () => {
      const d = vscode.languages.getDiagnostics(uri);
      return d.length > 0 && d;
    });
    const expected = { line: 2, start: text.split('\n')[2].indexOf('"cwd"') };
    assert.match(live.message, /cwd "\.\.\/\.\." resolves outside the workspace folder/);
    assert.deepEqual({ line: live.range.start.line, start: live.range.start.character }, expected);

    // What a reload does: a new instance, connected already, knows only what /logs says.
    const reloaded = new QueueDiagnostics(api._testing.client);
    try {
      const [read] = await waitFor('the reloaded diagnostics to read the rejection back', () => {
        const d = reloaded.collection.get(uri);
        return d && d.length > 0 && d;
      });
      assert.equal(read.source, 'Engine Monitor');
      assert.equal(read.message, live.message);
      assert.deepEqual({ line: read.range.start.line, start: read.range.start.character }, expected);
    } finally {
      reloaded.dispose();
    }
    await fs.rm(file);
    await waitFor('the deleted file\'s diagnostic to clear', () => vscode.languages.getDiagnostics(uri).length === 0);
  });
});

// Show Output and Find Item against the real engine of this window: the
// terminal is a vscode.Pseudoterminal, and what it wrote is read back from its session (the
// extension keeps the first and the last 64 KiB written; `window.onDidWriteTerminalData` is a
// proposed API that an extension cannot use in code-server 4.100 / VS Code 1.100).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { OutputSession } from '../../src/extension/output/outputTerminal';
import { acceptInQuickPick, addItem, getApi, itemDetail, showViews, viewNodes, waitFor, waitForEngine } from './helpers';

/** Closes every terminal this suite opened (a Pseudoterminal's close aborts its request). */
async function closeTerminals(): Promise<void> {
  for (const t of vscode.window.terminals) t.dispose();
  await waitFor('the terminals to close', () => vscode.window.terminals.length === 0, 10_000);
}

describe('Show Output and Find Item', function () {
  this.timeout(90_000);
  let gateDir: string;

  before(async function () {
    this.timeout(90_000);
    const api = await getApi();
    await waitForEngine(api);
    await showViews(api);
    gateDir = await fs.mkdtemp(path.join(os.tmpdir(), 'engine-monitor-gate-'));
  });

  after(async () => {
    await closeTerminals();
    await fs.rm(gateDir, { recursive: true, force: true });
  });

  it('prints the whole stored output of a 200-line attempt in a terminal named after the item and attempt', async () => {
    const api = await getApi();
    const id = 'output-200-lines';
    await addItem({
      id,
      name: 'Two hundred lines',
      command: 'node',
      args: ['-e', "for (let i = 1; i <= 200; i++) console.log('line ' + i + ' of 200'); console.error('a warning on stderr')"],
      maxAttempts: 1,
    });
    await waitFor(`${id} to launch`, async () => (await itemDetail(id)).outcome === 'launched');

    const session = (await vscode.commands.executeCommand<OutputSession>('engineMonitor.showOutput', id));
    assert.ok(session, 'Show Output returns the terminal session');
    await waitFor('the output to be printed to its end', () => session.state === 'ended');
    assert.equal(session.terminal?.name, 'Two hundred lines · attempt 1/1');
    assert.ok(vscode.window.terminals.includes(session.terminal), 'the terminal is open');

    // The first and the last line, each ending in \r\n (a raw terminal needs the \r).
    assert.ok(session.head.includes('line 1 of 200\r\n'), `first line missing from ${JSON.stringify(session.head.slice(0, 300))}`);
    assert.ok(session.tail.includes('line 200 of 200\r\n'), `last line missing from ${JSON.stringify(session.tail.slice(-300))}`);
    const all = session.head;
    assert.equal(all.match(/line \d+ of 200\r\n/g)?.length, 200, 'every line once');
    assert.ok(!/[^\r]\n/.test(all), 'no bare \\n reaches the terminal');
    assert.match(session.tail, /attempt 1 succeeded/);
    // stderr in ANSI red (the terminal draws it in the theme's terminal.ansiRed), stdout not.
    assert.ok(session.tail.includes('\x1b[31ma warning on stderr\r\n\x1b[39m'), `stderr not red in ${JSON.stringify(session.tail.slice(-400))}`);
    assert.ok(!/\x1b\[31m[^\x1b]*line \d+ of 200/.test(all), 'stdout is not red');

    // Showing the same attempt again shows the same terminal.
    const again = await vscode.commands.executeCommand<OutputSession>('engineMonitor.showOutput', { itemId: id, attempt: 1 });
    assert.equal(again, session);
    // A click on the item in the Items view runs the same command for the same item.
    const node = await waitFor('the item in the Items view', () => viewNodes(api, 'items').find((n) => n.item?.id === id));
    assert.equal(node.command?.command, 'engineMonitor.showOutput');
    assert.deepEqual(node.command?.arguments, [id]);
    // So does a click on a log entry about the attempt, naming that attempt.
    const entry = await waitFor('its launch_succeeded entry in the Logs view', () =>
      viewNodes(api, 'logs').find((n) => n.entry?.itemId === id && n.entry.action === 'launch_succeeded'));
    assert.equal(entry.command?.command, 'engineMonitor.showOutput');
    assert.deepEqual(entry.command?.arguments, [{ itemId: id, attempt: 1 }]);
    assert.equal(await vscode.commands.executeCommand('engineMonitor.showOutput', ...(entry.command?.arguments ?? [])), session);
  });

  it('follows a running attempt live until it ends, then says how it ended', async () => {
    const gate = path.join(gateDir, 'open');
    const id = 'output-follow';
    // Prints, then waits for the test to create the gate file: no timing in the test.
    const script = "const fs = require('fs'); console.log('before the gate'); const t = setInterval(() => { if (fs.existsSync(process.argv[1])) { clearInterval(t); console.log('after the gate'); } }, 50);";
    await addItem({ id, name: 'Gated', command: 'node', args: ['-e', script, gate], maxAttempts: 1 });
    await waitFor(`${id} to run`, async () => (await itemDetail(id)).state === 'running');

    const session = (await vscode.commands.executeCommand<OutputSession>('engineMonitor.showOutput', id));
    await waitFor('the output so far', () => session.tail.includes('before the gate\r\n'));
    assert.equal(session.state, 'following', 'still following while the attempt runs');
    assert.ok(!session.tail.includes('after the gate'));

    await fs.writeFile(gate, '');
    await waitFor('the attempt to end and the terminal to stop following', () => session.state === 'ended');
    assert.ok(session.tail.includes('after the gate\r\n'), 'output written after the terminal opened is shown');
    assert.match(session.tail, /attempt 1 succeeded/);
    assert.ok(session.tail.indexOf('after the gate') < session.tail.indexOf('attempt 1 succeeded'));
  });

  it('Ctrl+C stops following, Show Output again follows anew in the same terminal, and closing the terminal stops it', async () => {
    const gate = path.join(gateDir, 'never');
    const id = 'output-close';
    const script = "const fs = require('fs'); console.log('waiting'); setInterval(() => { if (fs.existsSync(process.argv[1])) process.exit(0); }, 50);";
    await addItem({ id, name: 'Never ends', command: 'node', args: ['-e', script, gate], maxAttempts: 1 });
    await waitFor(`${id} to run`, async () => (await itemDetail(id)).state === 'running');

    const first = await vscode.commands.executeCommand<OutputSession>('engineMonitor.showOutput', id);
    await waitFor('the terminal to follow', () => first.state === 'following' && first.tail.includes('waiting'));
    first.terminal!.sendText('\x03', false);
    await waitFor('Ctrl+C to stop following', () => first.state === 'ended', 10_000);
    assert.match(first.tail, /stopped following \(Ctrl\+C\); the attempt goes on/);
    assert.equal(first.complete, false);
    assert.equal((await itemDetail(id)).state, 'running', 'Ctrl+C does not touch the attempt');

    const second = await vscode.commands.executeCommand<OutputSession>('engineMonitor.showOutput', id);
    // The item's terminal is reused (no pile of terminals): cleared, it follows anew.
    assert.equal(second, first, "the item's terminal is reused");
    await waitFor('the terminal to follow again', () => second.state === 'following' && second.tail.includes('waiting'));
    second.terminal!.dispose();
    await waitFor('the session to end with its terminal', () => second.closed && second.state === 'ended', 10_000);
    assert.equal((await itemDetail(id)).state, 'running', 'closing the terminal does not touch the attempt');
    await fs.writeFile(gate, '');
    await waitFor(`${id} to finish`, async () => (await itemDetail(id)).outcome === 'launched');
  });

  it('Find Item searches /items?q= as the user types and opens the chosen item\'s output', async () => {
    const api = await getApi();
    const found = vscode.commands.executeCommand<{ itemId: string } | undefined>('engineMonitor.findItem');
    const qp = await waitFor('the Find Item quick pick', () => api._testing.itemPick);
    qp.value = 'two hund';
    const pick = await waitFor('the matching item in the list', () =>
      qp.items.length > 0 && !qp.busy && qp.items.every((i) => (i as unknown as { item: { id: string } }).item.id === 'output-200-lines') && qp.items[0]);
    assert.match(pick.description ?? '', /^launched · 1\/1 attempts$/);
    await acceptInQuickPick(qp, pick);
    assert.deepEqual(await found, { itemId: 'output-200-lines' });
    await waitFor('its output terminal', () =>
      api._testing.outputTerminals.open.some((s) => s.itemId === 'output-200-lines' && s.terminal === vscode.window.activeTerminal));
  });

  it('says so, without a terminal, for an item that never ran', async () => {
    const api = await getApi();
    await addItem({ id: 'output-never-ran', name: 'Later', command: 'node', args: ['-e', '0'], runAt: '2099-01-01T00:00:00.000Z' });
    const before = api._testing.outputTerminals.open.length;
    assert.equal(await vscode.commands.executeCommand('engineMonitor.showOutput', 'output-never-ran'), undefined);
    assert.equal(api._testing.outputTerminals.open.length, before);
  });
});

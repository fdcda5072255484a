// VS Code's tasks and the engine, in a real VS Code: tasks.json tasks of type `engine-monitor`
// used as another task's `dependsOn` end with the item's exit code (so a failing item stops the
// task that depends on it), their terminals show the attempt's output live, Queue Task… turns a
// shell task into an item the engine accepts, and saving a watched file in the editor fires once.
import * as assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LogEntry } from '../../src/shared/api';
import { writeQueueItem } from '../../src/extension/queue';
import { describeTask } from '../../src/extension/tasks/queueTask';
import { itemFromTask } from '../../src/extension/tasks/taskItem';
import { addItem, getApi, getJson, itemDetail, nodeById, waitFor, waitForEngine } from './helpers';

const node = (code: string) => ({ command: process.execPath, args: ['-e', code] });

describe('VS Code tasks and file triggers', () => {
  const folder = () => vscode.workspace.workspaceFolders![0].uri.fsPath;

  before(async function () {
    this.timeout(90_000);
    await waitForEngine(await getApi());
  });

  /** Puts files.autoSave back as the test found it (a test that turned it off sets this). */
  let restoreAutoSave: (() => Thenable<void>) | undefined;
  afterEach(async () => {
    await restoreAutoSave?.();
    restoreAutoSave = undefined;
  });

  /** The exit code VS Code reports when `name` ends (its process, or a CustomExecution's pseudoterminal). */
  const ended = (name: string) =>
    new Promise<number | undefined>((resolve) => {
      const sub = vscode.tasks.onDidEndTaskProcess((e) => {
        if (e.execution.task.name !== name) return;
        sub.dispose();
        resolve(e.exitCode);
      });
    });

  it('an engine-monitor task as a dependsOn retries the failed item, shows its output live and ends with its exit code', async function () {
    this.timeout(180_000);
    const api = await getApi();
    // Both items fail once on their own; the tasks then retry them.
    await addItem({ id: 'task-passes', ...node("console.log('passing output from the item');process.exit(require('fs').existsSync('pass-marker')?0:5)"), maxAttempts: 1 });
    await addItem({ id: 'task-fails', ...node("console.log('failing output from the item');process.exit(3)"), maxAttempts: 1 });
    await waitFor('both items to fail', async () => (await itemDetail('task-passes')).outcome === 'failed' && (await itemDetail('task-fails')).outcome === 'failed', 60_000);
    writeFileSync(path.join(folder(), 'pass-marker'), '');
    mkdirSync(path.join(folder(), '.vscode'), { recursive: true });
    const after = (file: string) => `node -e "require('fs').writeFileSync('${file}','ran')"`;
    writeFileSync(
      path.join(folder(), '.vscode', 'tasks.json'),
      JSON.stringify({
        version: '2.0.0',
        tasks: [
          { label: 'em-passes', type: 'engine-monitor', item: 'task-passes' },
          { label: 'after-passes', type: 'shell', command: after('after-passes.txt'), dependsOn: ['em-passes'], problemMatcher: ['$tsc'] },
          { label: 'em-fails', type: 'engine-monitor', item: 'task-fails' },
          { label: 'after-fails', type: 'shell', command: after('after-fails.txt'), dependsOn: ['em-fails'], problemMatcher: [] },
        ],
      }),
    );
    const tasks = await waitFor('tasks.json to be read', async () => {
      const all = await vscode.tasks.fetchTasks();
      return all.some((t) => t.name === 'after-fails') && all;
    });
    // The provider lists every known item as a task of the type.
    const provided = await vscode.tasks.fetchTasks({ type: 'engine-monitor' });
    assert.ok(provided.some((t) => (t.definition as { item?: string }).item === 'task-fails'), `provided: ${provided.map((t) => t.name).join(', ')}`);

    const passesEnded = ended('em-passes');
    const afterPassesEnded = ended('after-passes');
    await vscode.tasks.executeTask(tasks.find((t) => t.name === 'after-passes')!);
    assert.equal(await passesEnded, 0, 'the engine-monitor task ends with the retried attempt\'s exit code');
    assert.equal(await afterPassesEnded, 0);
    assert.ok(existsSync(path.join(folder(), 'after-passes.txt')), 'the task that depends on it ran');
    assert.equal((await itemDetail('task-passes')).outcome, 'launched');
    const passTerminal = api._testing.tasks.started.find((t) => t.itemId === 'task-passes')!;
    assert.match(passTerminal.transcript, /passing output from the item/);
    assert.match(passTerminal.transcript, /retrying it/);

    const failsEnded = ended('em-fails');
    await vscode.tasks.executeTask(tasks.find((t) => t.name === 'after-fails')!);
    assert.equal(await failsEnded, 3, 'a failing item fails its task with the attempt\'s exit code');
    const failTerminal = api._testing.tasks.started.find((t) => t.itemId === 'task-fails')!;
    assert.equal(failTerminal.exitCode, 3);
    assert.match(failTerminal.transcript, /failing output from the item/);
    // VS Code decides about the dependent task when the dependency ends; a task run after that
    // has ended has seen the decision made.
    const probeEnded = ended('probe');
    await vscode.tasks.executeTask(new vscode.Task({ type: 'shell' }, vscode.TaskScope.Workspace, 'probe', 'test', new vscode.ShellExecution('true')));
    await probeEnded;
    assert.ok(!existsSync(path.join(folder(), 'after-fails.txt')), 'the task that depends on a failed item did not run');
    assert.equal((await itemDetail('task-fails')).attempts.length >= 2, true, 'the failed item was retried');

    // Queue Task…'s conversion of the real vscode.Task tasks.json gave: the engine accepts it.
    const shellTask = tasks.find((t) => t.name === 'after-passes')!;
    const converted = itemFromTask(describeTask(shellTask)!, folder(), 'queued-after-passes', { kind: 'watch', paths: ['docs/**/*.md'] });
    assert.ok(converted.ok, converted.ok ? '' : converted.reason);
    assert.deepEqual(converted.item, {
      id: 'queued-after-passes',
      name: 'after-passes',
      command: after('after-passes.txt'),
      shell: true,
      problemMatcher: '$tsc',
      watch: { paths: ['docs/**/*.md'] },
    });
    await addItem({ ...converted.item, watch: undefined, id: 'queued-after-passes' });
    await waitFor('the queued task to launch', async () => (await itemDetail('queued-after-passes')).outcome === 'launched', 60_000);
  });

  it('Queue Task… writes the picked tasks.json task as a watched item, which a change to its files runs', async function () {
    this.timeout(120_000);
    const api = await getApi();
    const queueDir = path.join(folder(), '.engine', 'queue');
    const restore = answerPrompts(['after-passes', 'When files change…'], ['docs/**/*.md']);
    try {
      await vscode.commands.executeCommand('engineMonitor.queueTask');
    } finally {
      restore();
    }
    const name = readdirSync(queueDir).find((f) => f.startsWith('after-passes-') && f.endsWith('.json'));
    assert.ok(name, `a queue file for the task in ${readdirSync(queueDir).join(', ')}`);
    const written = JSON.parse(readFileSync(path.join(queueDir, name), 'utf8')) as Record<string, unknown> & { id: string };
    assert.deepEqual(written, {
      id: name.replace(/\.json$/, ''),
      name: 'after-passes',
      command: `node -e "require('fs').writeFileSync('after-passes.txt','ran')"`,
      shell: true,
      problemMatcher: '$tsc',
      watch: { paths: ['docs/**/*.md'] },
    });
    await waitFor('the engine to list the watched template', async () => (await getJson<Array<{ id: string; watch?: unknown }>>(api, '/schedules')).some((t) => t.id === written.id && t.watch));
    // The watcher is set up after the poll that found it: change a file until it fires.
    const firing = async () => (await getJson<LogEntry[]>(api, '/logs?action=watch_fired&limit=100')).find((l) => (l.details as { template?: string } | null)?.template === written.id);
    mkdirSync(path.join(folder(), 'docs'), { recursive: true });
    let n = 0;
    const fired = await waitFor('a change under docs/ to fire the queued task', async () => {
      writeFileSync(path.join(folder(), 'docs', 'guide.md'), `change ${++n}\n`);
      return waitFor('its firing', firing, 3_000).catch(() => undefined);
    }, 60_000);
    await waitFor('the occurrence to launch', async () => (await itemDetail(fired.itemId!)).outcome === 'launched', 60_000);
  });

  it('saving a watched file in the editor fires the watch once per save', async function () {
    this.timeout(120_000);
    const api = await getApi();
    const file = path.join(folder(), 'src', 'watched.ts');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, 'export const a = 1;\n');
    // A template is not an item (GET /items/on-save has nothing): written, polled, then read from /schedules.
    await writeQueueItem(path.join(folder(), '.engine', 'queue'), { id: 'on-save', ...node('0'), watch: { paths: ['src/**/*.ts'], debounceMs: 300 } });
    await vscode.commands.executeCommand('engineMonitor.pollNow');
    await waitFor('the watched template', async () => (await getJson<Array<{ id: string }>>(api, '/schedules')).some((s) => s.id === 'on-save'));
    // The Schedules view lists it with what it watches instead of a next run.
    await vscode.commands.executeCommand('workbench.view.extension.engineMonitor');
    await vscode.commands.executeCommand('engineMonitor.schedules.focus');
    const row = await waitFor('the on-save row in the Schedules view', () => nodeById(api, 'schedules', 'schedules.on-save'));
    assert.equal(row.description, 'watches src/**/*.ts');
    const fired = async () => (await getJson<LogEntry[]>(api, '/logs?action=watch_fired&limit=100')).filter((l) => (l.details as { template?: string } | null)?.template === 'on-save');
    // code-server saves a dirty file by itself a second after an edit (files.autoSave defaults to
    // afterDelay on the web). On a loaded machine that save came before this test's own, which
    // then found nothing to save: every write here is the test's own save.
    const files = vscode.workspace.getConfiguration('files');
    await files.update('autoSave', 'off', vscode.ConfigurationTarget.Global);
    restoreAutoSave = () => files.update('autoSave', undefined, vscode.ConfigurationTarget.Global);
    const doc = await vscode.workspace.openTextDocument(file);
    await vscode.window.showTextDocument(doc);
    // The engine's watcher is set up after the poll that found the template: save until it fires,
    // then count from there.
    let saves = 0;
    await waitFor('a save to fire the watch', async () => {
      if ((await fired()).length > 0) return true;
      await save(doc, `// save ${++saves}\n`);
      return (await waitFor('the first firing', async () => (await fired()).length > 0, 3_000).catch(() => false)) === true;
    }, 60_000);
    const before = (await fired()).length;
    await save(doc, '// one more save\n');
    const after = await waitFor('the next firing', async () => {
      const f = await fired();
      return f.length > before && f;
    });
    // One save, one firing (the editor's writes settled into one burst).
    await save(doc, '// and another\n');
    const last = await waitFor('the firing of the last save', async () => {
      const f = await fired();
      return f.length > after.length && f;
    });
    assert.equal(last.length, after.length + 1, 'each save fired once');
    assert.deepEqual(last.map((l) => (l.details as { paths: string[] }).paths).slice(-2), [['src/watched.ts'], ['src/watched.ts']]);
  });
});

async function save(doc: vscode.TextDocument, line: string): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  edit.insert(doc.uri, new vscode.Position(doc.lineCount, 0), line);
  await vscode.workspace.applyEdit(edit);
  assert.ok(await doc.save(), 'the document was saved');
}

/**
 * Answers the quick picks (by label) and input boxes a command shows, in order, as a user would;
 * each input is checked by the box's own validation first. Returns the restore function.
 */
function answerPrompts(picks: string[], inputs: string[]): () => void {
  const w = vscode.window as unknown as Record<string, unknown>;
  const saved = { showQuickPick: w.showQuickPick, showInputBox: w.showInputBox, showInformationMessage: w.showInformationMessage };
  w.showQuickPick = async (items: readonly vscode.QuickPickItem[] | Thenable<readonly vscode.QuickPickItem[]>) => {
    const label = picks.shift();
    const list = await items;
    const found = list.find((i) => i.label === label);
    assert.ok(found, `a pick "${label}" among ${list.map((i) => i.label).join(', ')}`);
    return found;
  };
  w.showInputBox = async (options?: vscode.InputBoxOptions) => {
    const value = inputs.shift();
    assert.ok(value !== undefined, 'an answer for the input box');
    assert.equal(await options?.validateInput?.(value), undefined, `the box accepts "${value}"`);
    return value;
  };
  w.showInformationMessage = () => Promise.resolve(undefined);
  return () => Object.assign(w, saved);
}

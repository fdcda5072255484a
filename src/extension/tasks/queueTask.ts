// Queue Task…: pick a tasks.json task of type `shell` or `process`, and how it should run (once
// now, on a schedule, or when files change); it becomes an item file in the queue folder, so the
// engine runs it with retries, its history and its output kept.
import * as vscode from 'vscode';
import { newItemId, pickFolder, writeQueueItem, type QueueFolders } from '../queue';
import { cronInputProblem, itemFromTask, watchInput, type TaskDescription, type TaskTrigger } from './taskItem';

/** A picked task's `vscode.Task`, reduced to what an item can hold; undefined for other kinds of task. */
export function describeTask(task: vscode.Task): TaskDescription | undefined {
  const e = task.execution;
  const problemMatchers = task.problemMatchers?.length ? task.problemMatchers : writtenMatchers(task);
  const text = (v: string | vscode.ShellQuotedString) => (typeof v === 'string' ? v : v.value);
  if (e instanceof vscode.ShellExecution) {
    const base = { label: task.name, kind: 'shell' as const, cwd: e.options?.cwd, env: e.options?.env, problemMatchers };
    if (e.commandLine !== undefined) return { ...base, commandLine: e.commandLine };
    return { ...base, command: e.command === undefined ? undefined : text(e.command), args: (e.args ?? []).map(text) };
  }
  if (e instanceof vscode.ProcessExecution) {
    return { label: task.name, kind: 'process', command: e.process, args: e.args, cwd: e.options?.cwd, env: e.options?.env, problemMatchers };
  }
  return undefined;
}

/**
 * The problem matchers tasks.json gives the task, by name. VS Code's API does not report a
 * tasks.json task's matchers (fetchTasks leaves `problemMatchers` empty), but its configuration
 * section `tasks` is tasks.json itself.
 */
function writtenMatchers(task: vscode.Task): string[] {
  const scope = typeof task.scope === 'object' ? task.scope.uri : undefined;
  const written = vscode.workspace.getConfiguration('tasks', scope).get<Array<{ label?: string; problemMatcher?: unknown }>>('tasks') ?? [];
  const entry = written.find((t) => t.label === task.name);
  const matchers = Array.isArray(entry?.problemMatcher) ? entry.problemMatcher : [entry?.problemMatcher];
  return matchers.filter((m): m is string => typeof m === 'string');
}

interface TaskPick extends vscode.QuickPickItem {
  task: vscode.Task;
  description: string;
}

export async function queueTaskCommand(queue: QueueFolders, pollNow: () => Promise<unknown>): Promise<void> {
  const all = await vscode.tasks.fetchTasks();
  const picks: TaskPick[] = all
    .filter((t) => describeTask(t) !== undefined && (t.definition.type === 'shell' || t.definition.type === 'process'))
    .map((t) => ({ label: t.name, description: `${t.definition.type}${typeof t.scope === 'object' ? ` · ${t.scope.name}` : ''}`, detail: t.detail, task: t }));
  if (picks.length === 0) {
    void vscode.window.showInformationMessage('No task of type "shell" or "process" in tasks.json: add one (Tasks: Configure Task), then queue it.');
    return;
  }
  const picked = await vscode.window.showQuickPick(picks, { title: 'Queue Task (1/2)', placeHolder: 'Which task should the engine run?', ignoreFocusOut: true });
  if (!picked) return;
  const folder = typeof picked.task.scope === 'object' ? picked.task.scope : await pickFolder(queue.folders(), 'Queue the task in which workspace folder?');
  if (!folder) return;
  const trigger = await pickTrigger();
  if (!trigger) return;
  const description = describeTask(picked.task)!;
  const result = itemFromTask(description, folder.uri.fsPath, newItemId(picked.task.name), trigger);
  if (!result.ok) throw new Error(`Cannot queue task "${picked.task.name}": ${result.reason}.`);
  const file = await writeQueueItem(queue.queueUri(folder).fsPath, result.item);
  await queue.exists();
  await pollNow().catch(() => undefined);
  const how = trigger.kind === 'now' ? 'to run now' : trigger.kind === 'schedule' ? `on schedule ${trigger.cron}` : `to run when ${trigger.paths.join(', ')} change`;
  const choice = await vscode.window.showInformationMessage(`Queued task "${picked.task.name}" as item ${result.item.id} ${how}.`, 'Open File');
  if (choice === 'Open File') await vscode.window.showTextDocument(vscode.Uri.file(file));
}

async function pickTrigger(): Promise<TaskTrigger | undefined> {
  const choice = await vscode.window.showQuickPick(
    [
      { label: 'Once, now', when: 'now' as const },
      { label: 'On a schedule…', description: 'a cron expression', when: 'schedule' as const },
      { label: 'When files change…', description: 'globs to watch', when: 'watch' as const },
    ],
    { title: 'Queue Task (2/2)', placeHolder: 'When should it run?', ignoreFocusOut: true },
  );
  if (!choice) return undefined;
  if (choice.when === 'now') return { kind: 'now' };
  if (choice.when === 'schedule') {
    const cron = await vscode.window.showInputBox({
      title: 'Queue Task: schedule',
      prompt: 'A 5-field cron expression, in the engine\'s time zone (minute hour day-of-month month day-of-week)',
      placeHolder: 'e.g. 0 2 * * *',
      ignoreFocusOut: true,
      validateInput: cronInputProblem,
    });
    return cron === undefined ? undefined : { kind: 'schedule', cron: cron.trim().split(/\s+/).join(' ') };
  }
  const globs = await vscode.window.showInputBox({
    title: 'Queue Task: watch',
    prompt: 'Globs of the files whose changes run it, comma-separated, relative to the task\'s working folder',
    value: 'src/**/*',
    ignoreFocusOut: true,
    validateInput: (v) => {
      const r = watchInput(v);
      return 'problem' in r ? r.problem : undefined;
    },
  });
  if (globs === undefined) return undefined;
  const r = watchInput(globs);
  return 'paths' in r ? { kind: 'watch', paths: r.paths } : undefined;
}

// Queue Task…: what a tasks.json task of type `shell` or `process` becomes as a queue item. No
// `vscode` import: the unit tests run it directly, and the engine validates what it gives.
import * as path from 'node:path';
import { quoteCmd, quotePosix } from '../shellQuote';

/** The problem matchers the engine knows by name; a task's other matchers are left out. */
export const ENGINE_MATCHERS = ['$tsc', '$eslint-stylish', '$eslint-compact', '$gcc', '$go', '$python'] as const;

/** A task as VS Code describes it, reduced to what an item can hold. */
export interface TaskDescription {
  label: string;
  kind: 'shell' | 'process';
  /** A shell task written as one command line. */
  commandLine?: string;
  command?: string;
  args?: string[];
  /** As tasks.json writes it: `${workspaceFolder}` and `${workspaceFolderBasename}` are understood. */
  cwd?: string;
  env?: Record<string, string>;
  /** The task's problem matchers, by name (`$tsc`), as VS Code reports them. */
  problemMatchers: string[];
}

export type TaskTrigger = { kind: 'now' } | { kind: 'schedule'; cron: string } | { kind: 'watch'; paths: string[] };

export type TaskItemResult = { ok: true; item: Record<string, unknown> & { id: string; name: string } } | { ok: false; reason: string };

/** `${workspaceFolder}` and friends in a tasks.json string; anything else is refused, with why. */
function substitute(text: string, folder: string, what: string): string {
  const out = text.replace(/\$\{workspaceFolder\}/g, folder).replace(/\$\{workspaceFolderBasename\}/g, path.basename(folder)).replace(/\$\{pathSeparator\}/g, path.sep);
  const left = /\$\{[^}]*\}/.exec(out);
  if (left) throw new Error(`the task's ${what} uses ${left[0]}, which only VS Code can resolve when it runs the task; write the value itself`);
  return out;
}

/**
 * The item for `task` in workspace folder `folder`, with `id`. Shell tasks become `shell: true`
 * items (their arguments quoted for the engine's shell: /bin/sh, or cmd.exe on Windows); process
 * tasks keep their argv.
 */
export function itemFromTask(task: TaskDescription, folder: string, id: string, trigger: TaskTrigger, platform: NodeJS.Platform = process.platform): TaskItemResult {
  try {
    const item: Record<string, unknown> & { id: string; name: string } = { id, name: task.label };
    const args = (task.args ?? []).map((a) => substitute(a, folder, 'arguments'));
    if (task.kind === 'shell') {
      const quote = platform === 'win32' ? quoteCmd : quotePosix;
      const line = task.commandLine !== undefined ? task.commandLine : [task.command ?? '', ...args.map(quote)].join(' ');
      if (!line.trim()) return { ok: false, reason: `task "${task.label}" has no command` };
      item.command = substitute(line, folder, 'command');
      item.shell = true;
    } else {
      if (!task.command) return { ok: false, reason: `task "${task.label}" has no command` };
      item.command = substitute(task.command, folder, 'command');
      if (args.length > 0) item.args = args;
    }
    if (task.cwd !== undefined) {
      const cwd = path.resolve(folder, substitute(task.cwd, folder, 'cwd'));
      const rel = path.relative(folder, cwd);
      if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
        return { ok: false, reason: `the task's cwd "${task.cwd}" is outside the workspace folder ${folder}; an item runs inside it` };
      }
      if (rel !== '') item.cwd = rel.split(path.sep).join('/');
    }
    if (task.env && Object.keys(task.env).length > 0) {
      item.env = Object.fromEntries(Object.entries(task.env).map(([k, v]) => [k, substitute(v, folder, `env ${k}`)]));
    }
    const matchers = task.problemMatchers.filter((m): m is (typeof ENGINE_MATCHERS)[number] => (ENGINE_MATCHERS as readonly string[]).includes(m));
    if (matchers.length === 1) item.problemMatcher = matchers[0];
    else if (matchers.length > 1) item.problemMatcher = matchers;
    if (trigger.kind === 'schedule') item.schedule = trigger.cron;
    if (trigger.kind === 'watch') item.watch = { paths: trigger.paths };
    return { ok: true, item };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

/** Why `text` is not a 5-field cron expression, or undefined (the engine checks the rest). */
export function cronInputProblem(text: string): string | undefined {
  const fields = text.trim().split(/\s+/).filter(Boolean);
  return fields.length === 5 ? undefined : `A cron expression has 5 fields (minute hour day-of-month month day-of-week), e.g. "0 2 * * *"; this has ${fields.length}.`;
}

/** The globs of a comma-separated answer, or why they cannot be watched. */
export function watchInput(text: string): { paths: string[] } | { problem: string } {
  const paths = text.split(',').map((p) => p.trim()).filter(Boolean);
  if (paths.length === 0) return { problem: 'Enter at least one glob, relative to the workspace folder, e.g. src/**/*.ts' };
  const bad = paths.find((p) => path.isAbsolute(p) || p.split(/[\\/]/).includes('..'));
  if (bad) return { problem: `"${bad}" must stay inside the workspace folder (relative, without "..").` };
  return { paths };
}

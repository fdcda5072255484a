// The `engine-monitor` task type: `{ "type": "engine-monitor", "item": "<id>" }` in tasks.json (or
// picked from Run Task, where the provider lists every known item) launches the item through the
// engine and is a task like any other: a `preLaunchTask`, a `dependsOn` of another task. Its
// terminal is a Pseudoterminal that follows the item's attempts' output live, and the task ends
// with the exit code of the attempt that decided the item: 0 once it launched, the failed
// attempt's code (1 when it had none: a timeout, a signal, a spawn error) once it failed for good.
import * as vscode from 'vscode';
import type { AttemptDetail, HealthResponse, ItemDetail, ItemSummary } from '../../shared/api';
import type { EngineClient } from '../engineClient';
import type { EngineController } from '../engineController';
import { describeAttemptEnd, itemPath, outputPath } from '../output/outputTerminal';
import { noteLine, RunReader, TerminalText } from '../output/terminalText';

export const TASK_TYPE = 'engine-monitor';

export interface ItemTaskDefinition extends vscode.TaskDefinition {
  type: typeof TASK_TYPE;
  /** The item's id. */
  item: string;
}

export interface ItemTaskServices {
  client: Pick<EngineClient, 'get' | 'open' | 'connected' | 'onDidChangeConnection' | 'onDidReceiveEvent'>;
  controller: Pick<EngineController, 'control'>;
}

/** How long a task waits for an engine to connect (one starting with the window, say) before it fails. */
const CONNECT_WAIT_MS = 60_000;
/** The item is read again at least this often while the task waits for its next attempt, events or not. */
const RECHECK_MS = 1_000;
/** Items the provider lists at most (Run Task's list; tasks.json may name any item). */
const LIST_LIMIT = 1_000;
const PAGE = 500;
const RESET = '\x1b[0m';

const attemptKey = (a: AttemptDetail) => `${a.attempt}@${a.startedAt}`;

/** The task's exit code for an attempt that decided the item. */
export function exitCodeOf(detail: Pick<ItemDetail, 'outcome'>, attempt: AttemptDetail | undefined): number {
  if (detail.outcome === 'launched') return 0;
  return attempt?.exitCode !== null && attempt?.exitCode !== undefined && attempt.exitCode !== 0 ? attempt.exitCode : 1;
}

/** One run of an `engine-monitor` task. */
export class ItemTaskTerminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  private readonly closeEmitter = new vscode.EventEmitter<number>();
  readonly onDidClose = this.closeEmitter.event;
  private readonly abort = new AbortController();
  private ended = false;
  /** What was written, for the tests (the last 64 KiB). */
  transcript = '';
  /** The exit code the task ended with; undefined while it runs. */
  exitCode: number | undefined;

  constructor(
    private readonly s: ItemTaskServices,
    readonly itemId: string,
  ) {}

  open(): void {
    void this.run();
  }

  /** The task was terminated or its terminal closed: stop following; the item itself goes on. */
  close(): void {
    this.abort.abort();
    this.ended = true;
  }

  private write(text: string): void {
    if (!text || this.ended) return;
    this.transcript = (this.transcript + text).slice(-64 * 1024);
    this.writeEmitter.fire(text);
  }

  private end(code: number): void {
    if (this.ended) return;
    this.exitCode = code;
    this.ended = true;
    this.closeEmitter.fire(code);
  }

  private async run(): Promise<void> {
    try {
      if (!vscode.workspace.isTrusted) {
        // Restricted Mode: the engine launches nothing, so the task could only wait.
        this.write(noteLine('The workspace is not trusted: the engine launches nothing in Restricted Mode. Trust the workspace, then run the task again.'));
        return this.end(1);
      }
      await this.connected();
      const health = await this.s.client.get<HealthResponse>('/health').catch(() => undefined);
      if (health?.checks.engine === 'stopped') this.write(noteLine('The engine is stopped: the item waits until it is started (Engine Monitor: Start Engine).'));
      let detail = await this.read();
      // An attempt running now is followed too; those that ended before the task do not count.
      const seen = new Set(detail.attempts.filter((a) => a.outcome !== 'running').map(attemptKey));
      if (!(await this.launch(detail))) return;
      for (;;) {
        const attempt = await this.nextAttempt(seen);
        if (this.abort.signal.aborted) return;
        detail = await this.read();
        if (!attempt) {
          // It reached its outcome without another attempt (cancelled, or a dependency failed).
          this.write(noteLine(`"${detail.item.name}" is ${detail.outcome}${detail.error ? ` (${detail.error})` : ''}`));
          return this.end(exitCodeOf(detail, undefined));
        }
        seen.add(attemptKey(attempt));
        this.write(noteLine(`attempt ${attempt.attempt} of ${detail.item.maxAttempts}, started ${attempt.startedAt}`));
        await this.follow(attempt);
        if (this.abort.signal.aborted) return;
        detail = await this.read();
        const ended = detail.attempts.find((a) => attemptKey(a) === attemptKey(attempt)) ?? attempt;
        this.write(RESET + noteLine(describeAttemptEnd(ended)));
        if (detail.outcome !== 'pending') {
          this.write(noteLine(detail.outcome === 'launched' ? `"${detail.item.name}" launched` : `"${detail.item.name}" failed${detail.error ? `: ${detail.error}` : ''}`));
          return this.end(exitCodeOf(detail, ended));
        }
        this.write(noteLine(`"${detail.item.name}" will be retried (${detail.state})`));
      }
    } catch (err) {
      if (this.abort.signal.aborted) return;
      this.write(RESET + noteLine(err instanceof Error ? err.message : String(err)));
      this.end(1);
    }
  }

  /**
   * Sets the item going: retry a failed item, release a held one; a pending one starts when due.
   * A launched item already ran: the task ends at once with its last attempt's code (0). False
   * when the task has ended here.
   */
  private async launch(detail: ItemDetail): Promise<boolean> {
    const name = `"${detail.item.name}" (${detail.item.id})`;
    if (detail.outcome === 'launched') {
      this.write(noteLine(`${name} has already launched; an item runs once (give a new run another id, or queue it with a watch or a schedule)`));
      this.end(0);
      return false;
    }
    if (detail.outcome === 'failed') {
      this.write(noteLine(`${name} failed before; retrying it`));
      await this.s.controller.control({ command: 'retryItem', itemId: detail.item.id });
    } else if (detail.state === 'held') {
      this.write(noteLine(`${name} is held; releasing it`));
      await this.s.controller.control({ command: 'releaseItem', itemId: detail.item.id });
    } else {
      this.write(noteLine(`${name} is ${detail.state}; following its next attempt`));
    }
    return true;
  }

  private read(): Promise<ItemDetail> {
    return this.s.client.get<ItemDetail>(itemPath(this.itemId)).catch((err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(/\b404\b/.test(message) ? `The engine knows no item "${this.itemId}" (check "item" in the task, or queue the item first).` : message);
    });
  }

  private connected(): Promise<void> {
    if (this.s.client.connected) return Promise.resolve();
    this.write(noteLine('waiting for the engine…'));
    return this.until((done) => this.s.client.onDidChangeConnection((c) => c && done()), CONNECT_WAIT_MS, 'No engine connected within 60 s: start the engine (Engine Monitor: Start Engine) and run the task again.');
  }

  /**
   * The first attempt not in `seen`, once it exists; undefined when the item reached its outcome
   * without one. Read again on every event from the engine, and every second regardless.
   */
  private async nextAttempt(seen: Set<string>): Promise<AttemptDetail | undefined> {
    for (;;) {
      const detail = await this.read();
      const next = detail.attempts.find((a) => !seen.has(attemptKey(a)));
      if (next) return next;
      if (detail.outcome !== 'pending' || this.abort.signal.aborted) return undefined;
      await this.until((done) => this.s.client.onDidReceiveEvent(() => done()), RECHECK_MS).catch(() => undefined);
    }
  }

  /** Resolves when `subscribe` calls its `done`, after `ms`, or at once when the task is closed. */
  private until(subscribe: (done: () => void) => vscode.Disposable, ms: number, timeoutMessage?: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const finish = (error?: Error) => {
        clearTimeout(timer);
        sub.dispose();
        this.abort.signal.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const onAbort = () => finish();
      const sub = subscribe(() => finish());
      const timer = setTimeout(() => finish(timeoutMessage ? new Error(timeoutMessage) : undefined), ms);
      this.abort.signal.addEventListener('abort', onAbort);
    });
  }

  /** Writes the attempt's output as it comes, until the attempt ends (the engine then closes the response). */
  private async follow(attempt: AttemptDetail): Promise<void> {
    const res = await this.s.client.open(`${outputPath(this.itemId, attempt.attempt)}?follow=true&format=runs`, { signal: this.abort.signal });
    if (!res.ok || !res.body) {
      this.write(noteLine(`no output (HTTP ${res.status})`));
      await res.body?.cancel();
      return;
    }
    const text = new TerminalText();
    const runs = new RunReader();
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        for (const run of runs.push(value)) this.write(text.push(run.stream, run.bytes));
      }
    } finally {
      this.write(text.end());
    }
    if (!/\n$/.test(this.transcript.replace(/(\x1b\[[0-9;]*m)+$/, ''))) this.write('\r\n');
  }
}

/** Lists every known item as an `engine-monitor` task, and runs the ones tasks.json names. */
export class ItemTaskProvider implements vscode.TaskProvider {
  /** Every task terminal started, newest last (the tests read their exit codes). */
  readonly started: ItemTaskTerminal[] = [];

  constructor(private readonly s: ItemTaskServices) {}

  async provideTasks(): Promise<vscode.Task[]> {
    if (!this.s.client.connected) return [];
    const items: ItemSummary[] = [];
    for (let offset = 0; offset < LIST_LIMIT; offset += PAGE) {
      const page = await this.s.client.get<{ items: ItemSummary[]; total: number }>(`/items?limit=${PAGE}&offset=${offset}`);
      items.push(...page.items);
      if (items.length >= page.total || page.items.length === 0) break;
    }
    return items.map((i) => this.task({ type: TASK_TYPE, item: i.id }, vscode.TaskScope.Workspace, i.name && i.name !== i.id ? `${i.name} (${i.id})` : i.id));
  }

  resolveTask(task: vscode.Task): vscode.Task | undefined {
    const def = task.definition as Partial<ItemTaskDefinition>;
    if (typeof def.item !== 'string' || def.item === '') return undefined;
    // The definition object itself goes back: VS Code matches the resolved task to tasks.json by it.
    return this.task(task.definition as ItemTaskDefinition, task.scope ?? vscode.TaskScope.Workspace, task.name);
  }

  private task(def: ItemTaskDefinition, scope: vscode.TaskScope | vscode.WorkspaceFolder, name: string): vscode.Task {
    const execution = new vscode.CustomExecution(() => {
      const terminal = new ItemTaskTerminal(this.s, def.item);
      this.started.push(terminal);
      if (this.started.length > 50) this.started.shift();
      return Promise.resolve(terminal);
    });
    const task = new vscode.Task(def, scope, name, 'Engine Monitor', execution, []);
    task.detail = `launches item ${def.item} through the engine`;
    return task;
  }
}

export function registerItemTasks(s: ItemTaskServices): { provider: ItemTaskProvider; disposable: vscode.Disposable } {
  const provider = new ItemTaskProvider(s);
  return { provider, disposable: vscode.tasks.registerTaskProvider(TASK_TYPE, provider) };
}

// The control commands, each with its one handler. The extension's IPC channel
// (src/host/controlChannel.ts) and the HTTP control routes (src/server/routes.ts) both dispatch
// through this table, so a new command is one entry here and its name in the channel's protocol:
// neither dispatcher changes.
import type { ControlCommand } from '../../../shared/hostProtocol';
import { checkEntry } from '../../intake/checkEntry';
import type { ControllableEngine } from '../../kernel/monitoredEngine';

export type ControlCommandName = ControlCommand['command'];

export interface ControlCommandSpec {
  /** What it acts on: an item (or a schedule template, for hold and release), or the engine. */
  target: 'item' | 'engine';
  /** Its HTTP path's last part: POST /items/{id}/<http> or /engine/<http>. None: the extension alone may send it (or `httpDelete`). */
  http?: string;
  /** Sent over HTTP as DELETE /items/{id} (an item command without `http`). */
  httpDelete?: true;
  /**
   * What the channel answers with: the item as GET /items/{id} reports it after the change,
   * run's result, or nothing. Over HTTP an item command answers with the item, an engine command
   * with /status.
   */
  answer: 'item' | 'result' | 'none';
  /** `message`: the whole command as the channel sent it (the HTTP routes have only the id). */
  run(engine: ControllableEngine, itemId: string, message?: ControlCommand): unknown;
}

export const CONTROL_COMMANDS: Record<ControlCommandName, ControlCommandSpec> = {
  start: { target: 'engine', http: 'start', answer: 'none', run: (e) => e.startLaunching() },
  stop: { target: 'engine', http: 'stop', answer: 'none', run: (e) => e.stopLaunching() },
  pollNow: { target: 'engine', http: 'poll', answer: 'none', run: (e) => e.pollNow() },
  retryItem: { target: 'item', http: 'retry', answer: 'item', run: (e, id) => e.retryItem(id) },
  restartItem: { target: 'item', http: 'restart', answer: 'item', run: (e, id) => e.restartItem(id) },
  cancelItem: { target: 'item', http: 'cancel', answer: 'item', run: (e, id) => e.cancelItem(id) },
  holdItem: { target: 'item', http: 'hold', answer: 'item', run: (e, id) => e.holdItem(id) },
  releaseItem: { target: 'item', http: 'release', answer: 'item', run: (e, id) => e.releaseItem(id) },
  runAgain: { target: 'item', http: 'run-again', answer: 'item', run: (e, id) => e.control.runAgain(id) },
  // The item is gone afterwards: nothing to answer with.
  removeItem: { target: 'item', httpDelete: true, answer: 'none', run: (e, id) => e.control.removeItem(id) },
  clearFinished: { target: 'engine', http: 'clear-finished', answer: 'result', run: (e) => e.control.clearFinished() },
  retryAllFailed: { target: 'engine', answer: 'result', run: (e) => e.retryAllFailed() },
  grantTrust: { target: 'engine', answer: 'none', run: (e) => e.grantTrust() },
  // A window's queue files being typed (intake/draftHolds.ts): the editor's business, not HTTP's.
  holdDrafts: { target: 'engine', answer: 'none', run: (e, _id, m) => e.drafts.hold(field(m, 'client'), field(m, 'paths'), field(m, 'forMs')) },
  // Add Item…'s check of what is typed: the editor's business, not HTTP's.
  checkItem: { target: 'engine', answer: 'result', run: (_e, _id, m) => checkEntry(field(m, 'entry'), field(m, 'workspaceFolder')) },
  ingestDraft: {
    target: 'engine',
    answer: 'none',
    run: async (e, _id, m) => {
      e.drafts.ingest(field(m, 'path'));
      await e.pollNow();
    },
  },
};

/** A field of the channel's message, unchecked: the handler judges what it was given. */
function field(message: ControlCommand | undefined, name: string): unknown {
  if (message === undefined) return undefined;
  const fields: Record<string, unknown> = { ...message };
  return fields[name];
}

/** The HTTP path parts of the commands on `target`: `['cancel', 'retry', …]`. */
export function httpControlNames(target: 'item' | 'engine'): string[] {
  return Object.values(CONTROL_COMMANDS).flatMap((c) => (c.target === target && c.http ? [c.http] : []));
}

/** The command POST /items/{id}/<name> or /engine/<name> names, if any. */
export function httpControlCommand(target: 'item' | 'engine', name: string): ControlCommandSpec | undefined {
  return Object.values(CONTROL_COMMANDS).find((c) => c.target === target && c.http === name);
}

/** The command DELETE /items/{id} runs. */
export function httpDeleteCommand(): ControlCommandSpec {
  return Object.values(CONTROL_COMMANDS).find((c) => c.httpDelete)!;
}

/** Runs a command from the extension's channel; what it answers with (see `answer`). */
export async function runChannelCommand(engine: ControllableEngine, message: ControlCommand): Promise<unknown> {
  const spec = (CONTROL_COMMANDS as Partial<Record<string, ControlCommandSpec>>)[message.command];
  if (!spec) throw new Error(`unknown control command ${message.command}`);
  const itemId = 'itemId' in message ? message.itemId : '';
  const result = await spec.run(engine, itemId, message);
  if (spec.answer === 'item') return engine.itemDetail(itemId);
  return spec.answer === 'result' ? result : undefined;
}

// The item commands: Show Output, Cancel, Hold, Release, Retry, Retry All Failed and Find Item
// (Open Attempt in Terminal, in openInTerminal.ts, builds on Find Item). Each takes what its caller
// has (a tree node of the Items or Logs view, an item id, `{ itemId, attempt }`) or, from the
// palette, asks with a quick pick of the items it applies to.
import * as vscode from 'vscode';
import type { ItemDetail, ItemState, ItemSummary } from '../../shared/api';
import { ITEM_ACTION_APPLIES } from '../../shared/itemActions';
import { Commands, Views } from '../constants';
import type { EngineClient } from '../engineClient';
import type { EngineController } from '../engineController';
import type { EngineModel } from '../engineModel';
import { itemPath, type OutputSession, type OutputTerminals } from '../output/outputTerminal';
import type { TreeNode } from '../views/nodeTree';
import type { EngineViews } from '../views/treeViews';
import { latestAttempt, stateOf, targetOf, type OutputTarget } from './itemTarget';
import type { CommandHandlers } from './register';

/** The item quick pick open now (Find Item, or the pick of Cancel/Hold/Release): the tests type into it. */
export class OpenItemPick {
  current: vscode.QuickPick<vscode.QuickPickItem> | undefined;
}

export interface ItemCommandServices {
  client: Pick<EngineClient, 'get'>;
  controller: Pick<EngineController, 'control'>;
  model: Pick<EngineModel, 'refresh'>;
  outputTerminals: Pick<OutputTerminals, 'show'>;
  /** Find Item reveals an item that never ran in the Items view. */
  views: Pick<EngineViews, 'providers' | 'views'>;
  openPick: OpenItemPick;
}

export type ControlKind = 'cancel' | 'hold' | 'release';

/** Which items each control command applies to (the same rule as the Items view's `when` clauses). */
export const APPLIES: Record<ControlKind, (s: ItemState) => boolean> = ITEM_ACTION_APPLIES;

const CONTROL: Record<ControlKind, { command: 'cancelItem' | 'holdItem' | 'releaseItem'; verb: string; none: string; icon: string }> = {
  cancel: { command: 'cancelItem', verb: 'Cancel', none: 'No item is pending or running, so there is nothing to cancel.', icon: 'stop-circle' },
  hold: { command: 'holdItem', verb: 'Hold', none: 'No pending item can be held.', icon: 'debug-pause' },
  release: { command: 'releaseItem', verb: 'Release', none: 'No item is held.', icon: 'play' },
};

/** Pending items listed per palette pick: a longer queue is searched with Find Item. */
const PICK_LIMIT = 500;
/** Find Item asks the engine this long after the last keystroke. */
const FIND_DEBOUNCE_MS = 150;
const FIND_LIMIT = 50;

interface ItemPick extends vscode.QuickPickItem {
  item: ItemSummary;
}

function itemPick(item: ItemSummary): ItemPick {
  const state = stateOf(item);
  return {
    label: item.name || item.id,
    description: `${state} · ${item.attempts}/${item.maxAttempts} attempts`,
    detail: item.name && item.name !== item.id ? item.id : undefined,
    item,
  };
}

/** Show Output: the item's attempt (latest by default) in a terminal that follows it live. */
export async function showOutput(s: ItemCommandServices, arg: unknown): Promise<OutputSession | undefined> {
  const target = targetOf(arg) ?? (await findItem(s, 'Show the output of which item?', false));
  if (!target) return undefined;
  const detail = await s.client.get<ItemDetail>(itemPath(target.itemId));
  const candidates = target.attempt === undefined ? detail.attempts : detail.attempts.filter((a) => a.attempt === target.attempt);
  const attempt = latestAttempt({ ...detail, attempts: candidates });
  if (!attempt) {
    if (target.attempt !== undefined) throw new Error(`Item "${target.itemId}" has no attempt ${target.attempt} (it has ${detail.attempts.length}).`);
    void vscode.window.showInformationMessage(`"${detail.item.name}" has not run yet (${detail.state}), so it has no output.`);
    return undefined;
  }
  return s.outputTerminals.show(detail, attempt);
}

/** Cancel, Hold, Release: the item given, or one picked from those the command applies to. */
export async function controlItem(s: ItemCommandServices, kind: ControlKind, arg: unknown): Promise<unknown> {
  const spec = CONTROL[kind];
  const itemId = targetOf(arg)?.itemId ?? (await pickItemFor(s, kind));
  if (!itemId) return undefined;
  const result = await s.controller.control({ command: spec.command, itemId });
  const name = (result as Partial<ItemDetail> | undefined)?.item?.name;
  void vscode.window.setStatusBarMessage(`$(${spec.icon}) ${spec.verb}: ${name || itemId}`, 3000);
  s.model.refresh(true);
  return result;
}

async function pickItemFor(s: ItemCommandServices, kind: ControlKind): Promise<string | undefined> {
  const pending = (await s.client.get<{ items: ItemSummary[] }>(`/items?outcome=pending&limit=${PICK_LIMIT}`)).items;
  const items = pending.filter((i) => APPLIES[kind](stateOf(i)));
  if (items.length === 0) {
    void vscode.window.showInformationMessage(CONTROL[kind].none);
    return undefined;
  }
  const qp = vscode.window.createQuickPick<ItemPick>();
  qp.placeholder = `${CONTROL[kind].verb} which item?`;
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  qp.items = items.map(itemPick);
  const chosen = await runItemPick(s, qp);
  return chosen?.id;
}

/**
 * Shows `qp` and resolves with the item accepted, or undefined when it is hidden; disposes it. While
 * it is open it is `s.openPick.current`, so tests can see and drive it.
 */
async function runItemPick(s: ItemCommandServices, qp: vscode.QuickPick<ItemPick>, onShown?: () => void): Promise<ItemSummary | undefined> {
  // A terminal or panel that takes focus on its own (a Show Output terminal opening, a view
  // revealing) would otherwise close the pick the user asked for: Escape still closes it.
  qp.ignoreFocusOut = true;
  const chosen = await new Promise<ItemSummary | undefined>((resolve) => {
    qp.onDidAccept(() => {
      resolve(qp.selectedItems[0]?.item);
      qp.hide();
    });
    qp.onDidHide(() => resolve(undefined));
    s.openPick.current = qp;
    qp.show();
    onShown?.();
  });
  qp.dispose();
  if (s.openPick.current === qp) s.openPick.current = undefined;
  return chosen;
}

/**
 * Find Item…: a quick pick over `GET /items?q=`, asked again as the user types. Choosing an item
 * shows its latest attempt's output, or, for an item that never ran, reveals it in the Items view.
 * With `open` false it only returns what was chosen (Show Output's own picker).
 */
export async function findItem(s: ItemCommandServices, placeholder = 'Find an item by id, name, command or arguments', open = true): Promise<OutputTarget | undefined> {
  const qp = vscode.window.createQuickPick<ItemPick>();
  qp.placeholder = placeholder;
  qp.title = 'Find Item';
  // The engine matches word prefixes; VS Code's own fuzzy filter would hide what it found.
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  let timer: NodeJS.Timeout | undefined;
  let asked = 0;
  const search = async (q: string) => {
    const mine = ++asked;
    qp.busy = true;
    try {
      const query = q.trim() ? `&q=${encodeURIComponent(q.trim())}` : '';
      const { items } = await s.client.get<{ items: ItemSummary[] }>(`/items?limit=${FIND_LIMIT}${query}`);
      if (mine !== asked) return; // an answer to an older query
      const picks = items.map(itemPick);
      // alwaysShow: VS Code filters by label, the engine already matched id, command and args.
      for (const p of picks) p.alwaysShow = true;
      qp.items = picks;
    } catch (err) {
      if (mine !== asked) return;
      qp.items = [];
      qp.placeholder = err instanceof Error ? err.message : String(err);
    } finally {
      if (mine === asked) qp.busy = false;
    }
  };
  qp.onDidChangeValue((value) => {
    clearTimeout(timer);
    timer = setTimeout(() => void search(value), FIND_DEBOUNCE_MS);
  });
  const chosen = await runItemPick(s, qp, () => void search(''));
  clearTimeout(timer);
  if (!chosen || !open) return chosen ? { itemId: chosen.id } : undefined;
  if (chosen.attempts > 0) {
    await showOutput(s, chosen.id);
  } else {
    await revealItem(s, chosen.id);
  }
  return { itemId: chosen.id };
}

/** Reveals an item in the Items view, if the view lists it now. */
async function revealItem(s: ItemCommandServices, itemId: string): Promise<void> {
  await vscode.commands.executeCommand(`${Views.items}.focus`);
  const find = (nodes: readonly TreeNode[]): TreeNode | undefined => {
    for (const n of nodes) {
      if (n.item?.id === itemId) return n;
      const inner = find(n.children ?? []);
      if (inner) return inner;
    }
    return undefined;
  };
  const node = find(s.views.providers.items.getRoots());
  if (node) {
    await s.views.views.items.reveal(node, { select: true, focus: true });
  } else {
    void vscode.window.showInformationMessage(`"${itemId}" has not run yet; the Items view does not list it now (it shows the first items of each group).`);
  }
}

function describeResult(result: unknown): string | undefined {
  if (result && typeof result === 'object') {
    const r = result as Record<string, unknown>;
    const n = r.retried ?? r.count;
    if (typeof n === 'number') return `${n} item${n === 1 ? '' : 's'}`;
  }
  if (typeof result === 'number') return `${result} item${result === 1 ? '' : 's'}`;
  return undefined;
}

/** The item's name from a control command's answer (the item as GET /items/{id} reports it). */
export function nameOf(result: unknown): string | undefined {
  const name = (result as Partial<ItemDetail> | undefined)?.item?.name;
  return typeof name === 'string' && name ? name : undefined;
}

/** Retry Item from the palette: which failed item? undefined when none failed or none was picked. */
async function pickFailedItem(s: ItemCommandServices): Promise<string | undefined> {
  const failed = (await s.client.get<{ items: ItemSummary[] }>('/items?outcome=failed&limit=200')).items;
  if (failed.length === 0) {
    void vscode.window.showInformationMessage('No item has failed.');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    failed.map((i) => ({ label: i.name, description: i.id, detail: i.lastError ?? undefined, id: i.id })),
    { placeHolder: 'Retry which failed item?' },
  );
  return pick?.id;
}

type ItemCommandId = (typeof Commands)[
  'showOutput' | 'cancelItem' | 'holdItem' | 'releaseItem' | 'findItem' | 'retryItem' | 'retryAllFailed'
];

export function itemCommands(s: ItemCommandServices): CommandHandlers<ItemCommandId> {
  return {
    [Commands.showOutput]: (arg) => showOutput(s, arg),
    [Commands.cancelItem]: (arg) => controlItem(s, 'cancel', arg),
    [Commands.holdItem]: (arg) => controlItem(s, 'hold', arg),
    [Commands.releaseItem]: (arg) => controlItem(s, 'release', arg),
    [Commands.findItem]: () => findItem(s),
    [Commands.retryItem]: async (arg) => {
      const itemId = targetOf(arg)?.itemId ?? (await pickFailedItem(s));
      if (!itemId) return;
      const result = await s.controller.control({ command: 'retryItem', itemId });
      // The name the user gave the item, as everywhere else; the id only if the answer lacks it.
      void vscode.window.setStatusBarMessage(`$(debug-restart) Retrying ${nameOf(result) ?? itemId}`, 3000);
      s.model.refresh(true);
    },
    [Commands.retryAllFailed]: async () => {
      const result = await s.controller.control({ command: 'retryAllFailed' });
      const what = describeResult(result);
      void vscode.window.setStatusBarMessage(`$(debug-restart) Retrying ${what ?? 'all failed items'}`, 3000);
      s.model.refresh(true);
    },
  };
}

// The item commands of contract section 8: Show Output, Cancel, Hold, Release and Find Item. Each
// takes what its caller has (a tree node of the Items or Logs view, an item id, `{ itemId,
// attempt }`) or, from the palette, asks with a quick pick of the items it applies to.
import * as vscode from 'vscode';
import type { AttemptDetail, ItemDetail, ItemState, ItemSummary } from '../shared/api';
import { Commands, Views } from './constants';
import type { Container } from './container';
import { itemPath, type OutputSession } from './output/outputTerminal';
import type { TreeNode } from './views/nodeTree';

/** What Show Output is asked to show: an item, and one of its attempts (the latest by default). */
export interface OutputTarget {
  itemId: string;
  attempt?: number;
}

/**
 * An item command's argument: a tree node, an ItemSummary, `{ itemId, attempt }`, or an item id.
 * A Schedules view node gives its template's id: Hold and Release on a template disable and
 * enable it (section 9).
 */
export function targetOf(arg: unknown): OutputTarget | undefined {
  if (typeof arg === 'string') return arg ? { itemId: arg } : undefined;
  if (!arg || typeof arg !== 'object') return undefined;
  const a = arg as Partial<TreeNode> & Partial<ItemSummary> & Partial<OutputTarget>;
  if (typeof a.itemId === 'string') return { itemId: a.itemId, attempt: typeof a.attempt === 'number' ? a.attempt : undefined };
  if (a.item) return { itemId: a.item.id };
  if (a.entry?.itemId) return { itemId: a.entry.itemId };
  if (a.schedule) return { itemId: a.schedule.id };
  if (typeof a.id === 'string' && 'outcome' in a) return { itemId: a.id };
  return undefined;
}

/** The state of an item, also from an engine of part one that does not send `state`. */
export function stateOf(item: ItemSummary): ItemState {
  return item.state ?? (item.phase === 'done' ? item.outcome : item.phase);
}

export type ControlKind = 'cancel' | 'hold' | 'release';

/** Which items each control command applies to (the same rule as the Items view's `when` clauses). */
export const APPLIES: Record<ControlKind, (s: ItemState) => boolean> = {
  cancel: (s) => s !== 'launched' && s !== 'failed',
  hold: (s) => s !== 'launched' && s !== 'failed' && s !== 'held',
  release: (s) => s === 'held',
};

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

/** The latest attempt of an item (attempt numbers restart after a retry by hand: by start time). */
export function latestAttempt(detail: ItemDetail): AttemptDetail | undefined {
  let latest: AttemptDetail | undefined;
  for (const a of detail.attempts) if (!latest || a.startedAt >= latest.startedAt) latest = a;
  return latest;
}

/** Show Output: the item's attempt (latest by default) in a terminal that follows it live. */
export async function showOutput(c: Container, arg: unknown): Promise<OutputSession | undefined> {
  const target = targetOf(arg) ?? (await findItem(c, 'Show the output of which item?', false));
  if (!target) return undefined;
  const detail = await c.client.get<ItemDetail>(itemPath(target.itemId));
  const candidates = target.attempt === undefined ? detail.attempts : detail.attempts.filter((a) => a.attempt === target.attempt);
  const attempt = latestAttempt({ ...detail, attempts: candidates });
  if (!attempt) {
    if (target.attempt !== undefined) throw new Error(`Item "${target.itemId}" has no attempt ${target.attempt} (it has ${detail.attempts.length}).`);
    void vscode.window.showInformationMessage(`"${detail.item.name}" has not run yet (${detail.state}), so it has no output.`);
    return undefined;
  }
  return c.outputTerminals.show(detail, attempt);
}

/** Cancel, Hold, Release: the item given, or one picked from those the command applies to. */
export async function controlItem(c: Container, kind: ControlKind, arg: unknown): Promise<unknown> {
  const spec = CONTROL[kind];
  const itemId = targetOf(arg)?.itemId ?? (await pickItemFor(c, kind));
  if (!itemId) return undefined;
  const result = await c.controller.control({ command: spec.command, itemId });
  const name = (result as Partial<ItemDetail> | undefined)?.item?.name;
  void vscode.window.setStatusBarMessage(`$(${spec.icon}) ${spec.verb}: ${name || itemId}`, 3000);
  c.model.refresh(true);
  return result;
}

async function pickItemFor(c: Container, kind: ControlKind): Promise<string | undefined> {
  const pending = (await c.client.get<{ items: ItemSummary[] }>(`/items?outcome=pending&limit=${PICK_LIMIT}`)).items;
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
  const chosen = await runItemPick(c, qp);
  return chosen?.id;
}

/**
 * Shows `qp` and resolves with the item accepted, or undefined when it is hidden; disposes it. While
 * it is open it is `c.itemPick`, so tests can see and drive it.
 */
async function runItemPick(c: Container, qp: vscode.QuickPick<ItemPick>, onShown?: () => void): Promise<ItemSummary | undefined> {
  // A terminal or panel that takes focus on its own (a Show Output terminal opening, a view
  // revealing) would otherwise close the pick the user asked for: Escape still closes it.
  qp.ignoreFocusOut = true;
  const chosen = await new Promise<ItemSummary | undefined>((resolve) => {
    qp.onDidAccept(() => {
      resolve(qp.selectedItems[0]?.item);
      qp.hide();
    });
    qp.onDidHide(() => resolve(undefined));
    c.itemPick = qp;
    qp.show();
    onShown?.();
  });
  qp.dispose();
  if (c.itemPick === qp) c.itemPick = undefined;
  return chosen;
}

/**
 * Find Item…: a quick pick over `GET /items?q=`, asked again as the user types. Choosing an item
 * shows its latest attempt's output, or, for an item that never ran, reveals it in the Items view.
 * With `open` false it only returns what was chosen (Show Output's own picker).
 */
export async function findItem(c: Container, placeholder = 'Find an item by id, name, command or arguments', open = true): Promise<OutputTarget | undefined> {
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
      const { items } = await c.client.get<{ items: ItemSummary[] }>(`/items?limit=${FIND_LIMIT}${query}`);
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
  const chosen = await runItemPick(c, qp, () => void search(''));
  clearTimeout(timer);
  if (!chosen || !open) return chosen ? { itemId: chosen.id } : undefined;
  if (chosen.attempts > 0) {
    await showOutput(c, chosen.id);
  } else {
    await revealItem(c, chosen.id);
  }
  return { itemId: chosen.id };
}

/** Reveals an item in the Items view, if the view lists it now. */
async function revealItem(c: Container, itemId: string): Promise<void> {
  await vscode.commands.executeCommand(`${Views.items}.focus`);
  const find = (nodes: readonly TreeNode[]): TreeNode | undefined => {
    for (const n of nodes) {
      if (n.item?.id === itemId) return n;
      const inner = find(n.children ?? []);
      if (inner) return inner;
    }
    return undefined;
  };
  const node = find(c.views.providers.items.getRoots());
  if (node) {
    await c.views.views.items.reveal(node, { select: true, focus: true });
  } else {
    void vscode.window.showInformationMessage(`"${itemId}" has not run yet; the Items view does not list it now (it shows the first items of each group).`);
  }
}

/** The commands of this file, for commands.ts. */
type ItemCommandId = (typeof Commands)['showOutput' | 'cancelItem' | 'holdItem' | 'releaseItem' | 'findItem'];

export function itemCommandHandlers(c: Container): Record<ItemCommandId, (...args: unknown[]) => unknown> {
  return {
    [Commands.showOutput]: (arg) => showOutput(c, arg),
    [Commands.cancelItem]: (arg) => controlItem(c, 'cancel', arg),
    [Commands.holdItem]: (arg) => controlItem(c, 'hold', arg),
    [Commands.releaseItem]: (arg) => controlItem(c, 'release', arg),
    [Commands.findItem]: () => findItem(c),
  };
}

// Add Item…: a name and a command line, then the common optional fields as steps of their own
// (schedule, depends on, priority, problem matcher, service readiness, watch). Each answer is
// judged as it is typed by the engine's own rules (the host's `checkItem`, the very check a queue
// file's entry gets), so the file written is one the engine accepts.
import * as vscode from 'vscode';
import type { ControlCommand } from '../../shared/hostProtocol';
import { newItemId, pickFolder, writeQueueItem, type QueueFolders } from '../queue';
import {
  EXTRA_FIELDS,
  EXTRA_FIELD_LABELS,
  MATCHER_CHOICES,
  READY_CHOICES,
  READY_KINDS,
  conflictingFields,
  parseDependsOn,
  parsePriority,
  parseReady,
  parseSchedule,
  parseWatch,
  type ExtraField,
  type Parsed,
  type ReadyKind,
} from './addItemFields';

const NAME_MAX = 200;

export interface AddItemServices {
  queue: QueueFolders;
  /** The engine's check of an entry; undefined when this window does not run the engine (remote, attached elsewhere). */
  checkItem(): ((command: Extract<ControlCommand, { command: 'checkItem' }>) => Promise<unknown>) | undefined;
  pollNow(): Promise<unknown>;
}

type Entry = Record<string, unknown> & { id: string; name: string; command: string };

/** The engine's verdict on `entry`, as a validation message: undefined when it accepts it. */
async function engineProblem(s: AddItemServices, entry: Entry, workspaceFolder: string): Promise<string | undefined> {
  const check = s.checkItem();
  // Without an engine of its own the window checks the shapes only; the engine reports the rest
  // as a problem on the file when it reads it.
  if (!check) return undefined;
  let verdict: unknown;
  try {
    verdict = await check({ command: 'checkItem', entry, workspaceFolder });
  } catch {
    return undefined; // an engine that does not know the check (an older host) judges the file instead
  }
  const v = verdict as { ok?: boolean; reason?: unknown } | undefined;
  if (!v || v.ok !== false) return undefined;
  return `The engine would reject this: ${String(v.reason)}.`;
}

/** An input box whose answer becomes `field` of the entry; its text is judged as typed. */
async function askField<T>(
  s: AddItemServices,
  folder: string,
  entry: Entry,
  field: string,
  options: { title: string; prompt: string; placeHolder: string; value?: string },
  parse: (text: string) => Parsed<T>,
  extra: Record<string, unknown> = {},
): Promise<T | undefined> {
  const judge = async (text: string): Promise<string | undefined> => {
    const read = parse(text);
    if ('problem' in read) return read.problem;
    return engineProblem(s, { ...entry, ...extra, [field]: read.value }, folder);
  };
  const text = await vscode.window.showInputBox({ ...options, ignoreFocusOut: true, validateInput: judge });
  if (text === undefined) return undefined;
  const read = parse(text);
  return 'value' in read ? read.value : undefined;
}

/** "Add more": which optional fields to fill in; [] for none, undefined when dismissed. */
async function pickExtras(): Promise<ExtraField[] | undefined> {
  const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { field: ExtraField }>();
  qp.title = 'Add Item (3/3): add more?';
  qp.placeholder = 'Tick the fields to fill in next, or press Enter to queue the item as it is';
  qp.canSelectMany = true;
  qp.ignoreFocusOut = true;
  qp.items = EXTRA_FIELDS.map((field) => ({ ...EXTRA_FIELD_LABELS[field], field }));
  const picked = await new Promise<ExtraField[] | undefined>((resolve) => {
    qp.onDidAccept(() => {
      const fields = qp.selectedItems.map((i) => i.field);
      const conflict = conflictingFields(fields);
      if (conflict) {
        qp.title = conflict;
        return;
      }
      resolve(fields);
      qp.hide();
    });
    qp.onDidHide(() => resolve(undefined));
    qp.show();
  });
  qp.dispose();
  return picked;
}

/** Asks for one optional field and sets it on `entry`; false when the user gave up. */
async function fillField(s: AddItemServices, folder: string, entry: Entry, field: ExtraField, step: string): Promise<boolean> {
  const title = `Add Item: ${EXTRA_FIELD_LABELS[field].label} (${step})`;
  switch (field) {
    case 'schedule': {
      const v = await askField(s, folder, entry, 'schedule', { title, prompt: 'A cron expression (5 fields), optionally followed by a time zone', placeHolder: 'e.g. 0 2 * * * or 0 2 * * * Europe/Berlin' }, parseSchedule);
      if (v === undefined) return false;
      entry.schedule = v;
      return true;
    }
    case 'dependsOn': {
      const v = await askField(s, folder, entry, 'dependsOn', { title, prompt: 'Ids of the items that must have launched first, separated by commas', placeHolder: 'e.g. build-web, migrate-db' }, parseDependsOn);
      if (v === undefined) return false;
      entry.dependsOn = v;
      return true;
    }
    case 'priority': {
      const v = await askField(s, folder, entry, 'priority', { title, prompt: 'A whole number from -100 to 100: among due items, higher first (default 0)', placeHolder: 'e.g. 10' }, parsePriority);
      if (v === undefined) return false;
      entry.priority = v;
      return true;
    }
    case 'watch': {
      const v = await askField(s, folder, entry, 'watch', { title, prompt: 'Globs of the files whose changes run it, relative to the workspace folder, separated by commas', placeHolder: 'e.g. src/**/*.ts, package.json' }, parseWatch);
      if (v === undefined) return false;
      entry.watch = v;
      return true;
    }
    case 'problemMatcher': {
      const pick = await vscode.window.showQuickPick(
        MATCHER_CHOICES.map((m) => ({ label: m.name, description: m.description })),
        { title, placeHolder: 'Which problem matcher reads its output?', ignoreFocusOut: true },
      );
      if (!pick) return false;
      entry.problemMatcher = pick.label;
      return true;
    }
    case 'service':
      return fillService(s, folder, entry, title);
  }
}

async function fillService(s: AddItemServices, folder: string, entry: Entry, title: string): Promise<boolean> {
  const kind = await vscode.window.showQuickPick(
    READY_KINDS.map((k) => ({ label: READY_CHOICES[k].label, ready: k })),
    { title, placeHolder: 'It keeps running: when is it ready (what items that depend on it wait for)?', ignoreFocusOut: true },
  );
  if (!kind) return false;
  const k: ReadyKind = kind.ready;
  if (k === 'none') {
    entry.service = true;
    return true;
  }
  const c = READY_CHOICES[k];
  const ready = await askField(s, folder, entry, 'ready', { title, prompt: c.prompt, placeHolder: c.placeHolder }, (t) => parseReady(k, t), { service: true });
  if (ready === undefined) return false;
  entry.service = true;
  entry.ready = ready;
  return true;
}

export async function addItemCommand(s: AddItemServices): Promise<void> {
  const folder = await pickFolder(s.queue.folders(), 'Add the item to which workspace folder?');
  if (!folder) return;
  const root = folder.uri.fsPath;
  const name = await vscode.window.showInputBox({
    title: 'Add Item (1/3)',
    prompt: 'A name for the item',
    placeHolder: 'e.g. Nightly build',
    ignoreFocusOut: true,
    validateInput: (v) => (!v.trim() ? 'Enter a name.' : v.length > NAME_MAX ? `At most ${NAME_MAX} characters.` : undefined),
  });
  if (name === undefined) return;
  const entry: Entry = { id: newItemId(name.trim()), name: name.trim(), command: '', shell: true };
  const command = await askField(
    s,
    root,
    entry,
    'command',
    { title: 'Add Item (2/3)', prompt: 'The command line to launch (run by a shell, in the workspace folder)', placeHolder: 'e.g. npm run build' },
    (v): Parsed<string> => (!v.trim() ? { problem: 'Enter a command.' } : { value: v.trim() }),
  );
  if (command === undefined) return;
  entry.command = command;
  const extras = await pickExtras();
  if (extras === undefined) return;
  for (let i = 0; i < extras.length; i++) {
    if (!(await fillField(s, root, entry, extras[i], `${i + 1} of ${extras.length}`))) return;
  }
  // Judged whole once more: each step was judged with the fields before it, and this is what is written.
  const problem = await engineProblem(s, entry, root);
  if (problem) throw new Error(`Add Item: ${problem}`);
  const file = await writeQueueItem(s.queue.queueUri(folder).fsPath, entry);
  await s.queue.exists();
  // The scanner would find it on its next poll; ask for one now so the item shows up at once.
  await s.pollNow().catch(() => undefined);
  const choice = await vscode.window.showInformationMessage(`Queued "${entry.name}" (${entry.id}).`, 'Open File');
  if (choice === 'Open File') await vscode.window.showTextDocument(vscode.Uri.file(file));
}

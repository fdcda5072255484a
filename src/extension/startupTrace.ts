// The start-up, step by step, in the output channel: how long after activate() the engine was
// decided, started or attached, reached, and when the views had their first data. A slow first
// paint is then read off one log ("startup +812 ms: stream connected") instead of guessed at, by
// a user filing a report as much as by the bench. After "settled" it still notes the first answer
// of a view shown later (a reload tells the extension which views are visible only once the
// window has drawn them) and when the window first asked for the Items view's rows, then stops
// listening: once every part has answered, or after a minute. Between the extension host having
// the items and the rows on screen, these two marks tell the window's own steps apart.
import type * as vscode from 'vscode';
import type { Container } from './container';
import { disposeAll } from './dispose';

export function traceStartup(c: Container, activatedAt: number): vscode.Disposable {
  const subs: vscode.Disposable[] = [];
  const seen = new Set<string>();
  let done = false;
  let settled = false;
  const mark = (step: string, once = true) => {
    if (done || (once && seen.has(step)) || (settled && !step.startsWith('first '))) return;
    seen.add(step);
    c.output.info(`startup +${Date.now() - activatedAt} ms: ${step}`);
  };
  const stop = () => {
    done = true;
    clearTimeout(timer);
    queueMicrotask(() => disposeAll(subs));
  };
  const timer = setTimeout(stop, 60_000);
  const settledNow = () => {
    if (!settled && c.model.loaded && c.logs.loaded) {
      mark('settled: every visible view has its data');
      settled = true;
    }
    const parts = ['stats', 'health', 'status', 'items', 'schedules', 'items view visible', 'rows asked by the Items view'];
    if (settled && parts.every((p) => seen.has(`first ${p}`))) stop();
  };
  subs.push(
    c.controller.onDidChangeState((s) => mark(`engine ${s}`, false)),
    c.client.onDidChangeEndpoint((url) => url && mark(`endpoint ${url}`, false)),
    c.client.onDidChangeConnection((on) => on && mark('event stream connected')),
    c.model.onDidChange((parts) => {
      for (const p of parts) if (c.model[p] !== undefined) mark(`first ${p}`);
      settledNow();
    }),
    c.logs.onDidChange(() => {
      if (c.logs.loaded) mark('first log entries');
      settledNow();
    }),
    c.statusBar.onDidChangeText((text) => mark(`status bar "${text}"`, false)),
    // When the window says the Items view is shown: its items are read only from then on.
    c.views.views.items.onDidChangeVisibility((e) => {
      if (e.visible) mark('first items view visible');
      settledNow();
    }),
    // Roots asked for before the items came are the "Connecting…" state's, not rows.
    c.views.providers.items.onDidServeRoots(() => {
      if (c.model.items !== undefined) mark('first rows asked by the Items view');
      settledNow();
    }),
  );
  if (c.views.views.items.visible) mark('first items view visible');
  mark(`status bar "${c.statusBar.text}"`);
  return { dispose: () => (clearTimeout(timer), disposeAll(subs)) };
}

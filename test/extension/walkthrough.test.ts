// The "Get Started with Engine Monitor" walkthrough: contributed, every step has
// its Markdown media in the extension, and every command its links run or its completion events
// wait for exists, so a new user never clicks a dead link or a step that cannot complete.
import * as assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ContextKeys } from '../../src/extension/constants';
import { EXTENSION_ID, getApi } from './helpers';

interface WalkthroughStep {
  id: string;
  title: string;
  description: string;
  media: { markdown?: string; image?: unknown; svg?: string };
  completionEvents?: string[];
}
interface Walkthrough {
  id: string;
  title: string;
  steps: WalkthroughStep[];
}

describe('Walkthrough', () => {
  const ext = () => vscode.extensions.getExtension(EXTENSION_ID)!;
  const walkthrough = () => {
    const all = ext().packageJSON.contributes.walkthroughs as Walkthrough[] | undefined;
    const w = all?.find((x) => x.id === 'engineMonitor.gettingStarted');
    assert.ok(w, 'walkthrough engineMonitor.gettingStarted is contributed');
    return w;
  };

  it('takes a new user from the queue folder to a launched item and the HTTP API', () => {
    const w = walkthrough();
    assert.deepEqual(w.steps.map((s) => s.id), ['createQueueFolder', 'addItem', 'seeItLaunched', 'httpApi']);
    for (const step of w.steps) {
      assert.ok(step.media.markdown, `${step.id} has Markdown media`);
      const file = path.join(ext().extensionPath, step.media.markdown);
      assert.ok(existsSync(file), `${step.id}: ${step.media.markdown} exists`);
      assert.match(readFileSync(file, 'utf8'), /^# /, `${step.id}: its media starts with a heading`);
      assert.ok(step.completionEvents?.length, `${step.id} completes by itself`);
    }
    assert.match(w.steps[3].description, /ENGINE_MONITOR_URL/);
  });

  it('links and completion events name commands and views that exist', async () => {
    await getApi(); // the extension's commands are registered on activation
    const registered = new Set(await vscode.commands.getCommands(true));
    const views = new Set(
      Object.values(ext().packageJSON.contributes.views as Record<string, { id: string }[]>).flat().map((v) => v.id),
    );
    const contextKeys = new Set<string>(Object.values(ContextKeys));
    for (const step of walkthrough().steps) {
      const links = [...step.description.matchAll(/\(command:([\w.-]+)/g)].map((m) => m[1]);
      assert.ok(links.length > 0, `${step.id} offers an action`);
      for (const id of links) assert.ok(registered.has(id), `${step.id} links to unknown command ${id}`);
      for (const event of step.completionEvents ?? []) {
        const [kind, arg] = event.split(/:(.*)/s);
        if (kind === 'onCommand') assert.ok(registered.has(arg), `${step.id} waits for unknown command ${arg}`);
        else if (kind === 'onView') assert.ok(views.has(arg), `${step.id} waits for unknown view ${arg}`);
        else if (kind === 'onContext') assert.ok(contextKeys.has(arg), `${step.id} waits for unknown context key ${arg}`);
        else assert.fail(`${step.id}: unexpected completion event ${event}`);
      }
    }
  });

  it('opens in the workbench', async () => {
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${EXTENSION_ID}#engineMonitor.gettingStarted`, false);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });
});

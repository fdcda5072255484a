// The command and view ids in src/extension/constants.ts against package.json, both ways, and
// every place package.json names a command: menus, keybindings, and the `command:` links of welcome
// views and the walkthrough. A typo in any of them fails silently in VS Code (a dead link, a
// missing button), so it is checked here, in plain Node. test/extension/activation.test.ts checks
// that each contributed command is registered at run time.
import assert from 'node:assert/strict';
import manifest from '../../package.json';
import { Commands, Views } from '../../src/extension/constants';

const contributes = manifest.contributes as {
  commands: { command: string }[];
  views: Record<string, { id: string }[]>;
  viewsContainers: Record<string, { id: string }[]>;
  menus: Record<string, { command: string }[]>;
  keybindings?: { command: string }[];
  viewsWelcome: { view: string; contents: string }[];
  walkthroughs: { steps: { description: string; completionEvents?: string[] }[] }[];
};
const contributed = contributes.commands.map((c) => c.command);
const viewIds = Object.values(contributes.views).flat().map((v) => v.id);
/** VS Code's own commands that package.json links to, and the focus command of each of our views. */
const builtIn = new Set(['workbench.action.openSettings', 'workbench.action.terminal.new', ...viewIds.map((v) => `${v}.focus`)]);

/** The command of each `[label](command:id?args)` link in a Markdown text. */
function commandLinks(markdown: string): string[] {
  return [...markdown.matchAll(/\]\(command:([^)?\s]+)/g)].map((m) => m[1]);
}

describe('Command and view ids', () => {
  it('Commands holds exactly the contributed commands', () => {
    assert.deepEqual([...Object.values(Commands)].sort(), [...contributed].sort());
    assert.equal(new Set(contributed).size, contributed.length, 'no command is contributed twice');
  });

  it('Views holds exactly the contributed views and their container', () => {
    const { container, ...views } = Views;
    assert.deepEqual(Object.values(views).sort(), [...viewIds].sort());
    assert.deepEqual(Object.values(contributes.viewsContainers).flat().map((c) => c.id), [container]);
  });

  it('every menu entry and keybinding names a contributed command', () => {
    const entries = [...Object.entries(contributes.menus), ['keybindings', contributes.keybindings ?? []] as const];
    for (const [where, list] of entries) {
      for (const e of list) assert.ok(contributed.includes(e.command), `${where} names unknown command ${e.command}`);
    }
  });

  it('every command link in welcome views and the walkthrough names a contributed or built-in command', () => {
    const texts = [
      ...contributes.viewsWelcome.map((w) => ({ where: `viewsWelcome of ${w.view}`, text: w.contents })),
      ...contributes.walkthroughs.flatMap((w) => w.steps).map((s) => ({ where: 'walkthrough', text: s.description })),
    ];
    let links = 0;
    for (const { where, text } of texts) {
      for (const id of commandLinks(text)) {
        links++;
        assert.ok(contributed.includes(id) || builtIn.has(id), `${where} links to unknown command ${id}`);
      }
    }
    assert.ok(links > 0, 'the link pattern still finds links');
  });

  it("the walkthrough's onCommand completion events name contributed or built-in commands", () => {
    const events = contributes.walkthroughs.flatMap((w) => w.steps).flatMap((s) => s.completionEvents ?? []);
    for (const id of events.filter((e) => e.startsWith('onCommand:')).map((e) => e.slice('onCommand:'.length))) {
      assert.ok(contributed.includes(id) || builtIn.has(id), `completion event names unknown command ${id}`);
    }
  });
});

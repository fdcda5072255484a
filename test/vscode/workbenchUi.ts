// Steps the UI tests take in the workbench as a user would, shared so each test file does not keep
// its own copy: find the dashboard's webview, pick a colour theme from the palette.
import type { Frame, Page } from 'playwright-core';
import { waitUntil } from './engineProbe';

/** The dashboard's webview frame, once its cards are rendered. */
export async function dashboardFrame(page: Page): Promise<Frame> {
  return waitUntil('the dashboard frame', async () => {
    for (const f of page.frames()) {
      if (f.url().includes('webview') && (await f.locator('main#app .cards').count().catch(() => 0)) > 0) return f;
    }
    return undefined;
  });
}

/** Picks a colour theme the way a user does: "Preferences: Color Theme", then the theme's label. */
export async function pickColorTheme(page: Page, theme: string): Promise<void> {
  const widget = page.locator('.quick-input-widget');
  const input = widget.locator('.quick-input-box input');
  await page.locator('.monaco-workbench').first().focus().catch(() => undefined);
  await page.keyboard.press('F1');
  await input.fill('>Preferences: Color Theme');
  // Not the first entry ("Browse Color Themes in Marketplace" sorts before it).
  const rows = widget.locator('.quick-input-list .monaco-list-row');
  const index = await waitUntil('the Color Theme command', async () => {
    const labels = await rows.evaluateAll((els) => els.map((el) => el.querySelector('.label-name')?.textContent?.trim()));
    const i = labels.indexOf('Preferences: Color Theme');
    return i >= 0 ? i + 1 : undefined; // +1: 0 would read as "not yet"
  });
  await rows.nth(index - 1).click();
  // The same widget now lists themes.
  await widget.locator('.monaco-list-row', { hasText: 'Modern' }).first().waitFor();
  await input.fill(theme);
  await widget.locator('.monaco-list-row.focused', { hasText: theme }).first().waitFor();
  await input.press('Enter');
  await widget.waitFor({ state: 'hidden' });
}

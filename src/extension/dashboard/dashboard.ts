// "Show Engine Status": the one dashboard panel, opened or revealed on demand and restored after
// a window reload by a WebviewPanelSerializer (package.json activates on
// `onWebviewPanel:engineMonitor.dashboard`).
import * as vscode from 'vscode';
import type { EngineConnection } from '../engineConnection';
import { dashboardWebviewOptions } from './dashboardHtml';
import { DashboardPanel, type EngineStateSource } from './dashboardPanel';

export const DASHBOARD_VIEW_TYPE = 'engineMonitor.dashboard';
const TITLE = 'Engine Status';

let current: DashboardPanel | undefined;
/** Whether an engine is starting, expected or off: the panel says "connecting" rather than guess. */
let engineState: EngineStateSource | undefined;

function track(panel: DashboardPanel): DashboardPanel {
  current = panel;
  panel.onDidDispose(() => {
    if (current === panel) current = undefined;
  });
  return panel;
}

/** Registers the serializer that restores the panel after a reload; dispose to unregister and close it. */
export function registerDashboard(context: vscode.ExtensionContext, connection: EngineConnection, state?: EngineStateSource): vscode.Disposable {
  engineState = state;
  const serializer = vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, {
    // The webview's own state (filters, scroll) comes back through its getState(); nothing to do
    // with `state` here beyond letting the restored panel take it up.
    async deserializeWebviewPanel(panel: vscode.WebviewPanel) {
      if (current) {
        // Only one dashboard: a second restored panel (two were open before a crash) is closed.
        panel.dispose();
        return;
      }
      track(new DashboardPanel(panel, context.extensionUri, connection, engineState));
    },
  });
  return new vscode.Disposable(() => {
    engineState = undefined;
    serializer.dispose();
    current?.dispose();
  });
}

/** Opens the dashboard, or reveals it when it is already open. */
export function showDashboard(context: vscode.ExtensionContext, connection: EngineConnection): void {
  if (current) {
    current.reveal();
    return;
  }
  const panel = vscode.window.createWebviewPanel(DASHBOARD_VIEW_TYPE, TITLE, vscode.ViewColumn.Active, {
    ...dashboardWebviewOptions(context.extensionUri),
    // Filters and scroll survive hiding through getState; the data is simply read again.
    retainContextWhenHidden: false,
  });
  track(new DashboardPanel(panel, context.extensionUri, connection, engineState));
}

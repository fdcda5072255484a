// The webview's side of postMessage, typed by the shared protocol.
import type { DashboardState, HostToWebview, WebviewToHost } from '../../src/shared/webviewProtocol';

interface VsCodeApi {
  postMessage(message: WebviewToHost): void;
  getState(): DashboardState | undefined;
  setState(state: DashboardState): void;
}

declare global {
  // Provided by VS Code inside webviews; callable once per page.
  function acquireVsCodeApi(): VsCodeApi;
}

export const vscodeApi: VsCodeApi = acquireVsCodeApi();

export function onHostMessage(listener: (message: HostToWebview) => void): void {
  window.addEventListener('message', (e: MessageEvent) => {
    const data = e.data as { type?: unknown } | null;
    if (data && typeof data === 'object' && typeof data.type === 'string') listener(data as HostToWebview);
  });
}

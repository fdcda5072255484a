// The dashboard's HTML shell. Everything visible is built by dist/webview.js from data it gets
// over postMessage; this page only fixes the CSP and loads the script and styles.
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';

/** Folders the webview may load from: the built bundle (webview.js, codicons) and media/. */
export function dashboardResourceRoots(extensionUri: vscode.Uri): vscode.Uri[] {
  return [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')];
}

export function dashboardWebviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions {
  return { enableScripts: true, enableCommandUris: false, localResourceRoots: dashboardResourceRoots(extensionUri) };
}

export function dashboardHtml(webview: vscode.Webview, extensionUri: vscode.Uri): string {
  const nonce = randomBytes(16).toString('base64');
  const asset = (...p: string[]) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, ...p)).toString();
  // No connect-src: the webview reads the engine only through the extension host.
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${asset('dist', 'codicons', 'codicon.css')}">
<link rel="stylesheet" href="${asset('media', 'dashboard.css')}">
<title>Engine Status</title>
</head>
<body>
<main id="app" aria-busy="true"><p class="loading">Loading engine status…</p></main>
<script nonce="${nonce}" src="${asset('dist', 'webview.js')}"></script>
</body>
</html>`;
}

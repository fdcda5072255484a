// Formatting shared by the views and the status bar. Engine strings (messages, errors, names,
// details) are text: they go through MarkdownString.appendText or a code fence longer than any
// backtick run they contain, never into Markdown or HTML as they are.
import * as vscode from 'vscode';
import type { HealthStatus, LogAction } from '../../shared/api';
import { formatClock, formatDateTime, formatDuration as formatSharedDuration } from '../../shared/format';

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return 'never';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  // The dashboard's helpers: one format in the sidebar and the dashboard.
  const sameDay = new Date().toDateString() === d.toDateString();
  return sameDay ? formatClock(iso) : formatDateTime(iso);
}

export function formatAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const ms = now - new Date(iso).getTime();
  if (Number.isNaN(ms)) return iso;
  if (ms < 0) return `in ${formatDuration(-ms)}`;
  if (ms < 1000) return 'just now';
  return `${formatDuration(ms)} ago`;
}

export function formatDuration(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '—' : formatSharedDuration(ms);
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A Markdown code block that text cannot break out of. */
export function fenced(text: string, lang = ''): string {
  const longest = Math.max(0, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `\n${fence}${lang}\n${text}\n${fence}\n`;
}

/** An untrusted, HTML-free MarkdownString (the defaults, stated so no one flips them). */
export function safeMarkdown(): vscode.MarkdownString {
  const md = new vscode.MarkdownString('', true);
  md.isTrusted = false;
  md.supportHtml = false;
  return md;
}

/** `**label:** value` with the value escaped. */
export function appendField(md: vscode.MarkdownString, label: string, value: string | number | null | undefined): void {
  md.appendMarkdown(`**${label}:** `);
  md.appendText(value === null || value === undefined || value === '' ? '—' : String(value));
  md.appendMarkdown('  \n');
}

export function healthIcon(status: HealthStatus | undefined): vscode.ThemeIcon {
  switch (status) {
    case 'healthy':
      return new vscode.ThemeIcon('pass-filled', new vscode.ThemeColor('testing.iconPassed'));
    case 'degraded':
      return new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'));
    case 'unhealthy':
      return new vscode.ThemeIcon('error', new vscode.ThemeColor('problemsErrorIcon.foreground'));
    default:
      return new vscode.ThemeIcon('circle-outline');
  }
}

const GREEN = 'testing.iconPassed';
const YELLOW = 'problemsWarningIcon.foreground';
const RED = 'problemsErrorIcon.foreground';
const BLUE = 'charts.blue';

const ACTION_ICONS: Record<LogAction, [string, string?]> = {
  engine_started: ['play-circle', GREEN],
  engine_stopped: ['debug-stop', YELLOW],
  item_discovered: ['add'],
  item_rejected: ['circle-slash', YELLOW],
  launch_started: ['rocket', BLUE],
  launch_succeeded: ['pass', GREEN],
  launch_failed: ['error', RED],
  launch_interrupted: ['debug-disconnect', YELLOW],
  retry_scheduled: ['history'],
  item_failed: ['close', RED],
  item_retried: ['debug-restart', BLUE],
  source_error: ['warning', YELLOW],
  database_error: ['database', RED],
  database_recovered: ['database', YELLOW],
  launch_cancelled: ['circle-slash', RED],
  item_held: ['debug-pause', YELLOW],
  item_released: ['debug-continue', BLUE],
  item_updated: ['edit', BLUE],
  item_removed: ['trash'],
  schedule_fired: ['calendar', BLUE],
  schedule_skipped: ['calendar', YELLOW],
  watch_fired: ['eye', BLUE],
  watch_skipped: ['eye', YELLOW],
  item_blocked: ['debug-pause', YELLOW],
  dependency_failed: ['close', RED],
  hook_failed: ['bell-slash', RED],
  service_ready: ['vm-running', GREEN],
  service_exited: ['vm-outline', YELLOW],
  service_restarted: ['debug-restart', BLUE],
  attempt_slow: ['watch', YELLOW],
};

// Any string, not only a LogAction: a newer remote engine may log an action this one has no icon for.
export function actionIcon(action: string): vscode.ThemeIcon {
  const [id, color] = ACTION_ICONS[action as LogAction] ?? ['circle-small'];
  return new vscode.ThemeIcon(id, color ? new vscode.ThemeColor(color) : undefined);
}

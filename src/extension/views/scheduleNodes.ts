// Schedules view: one row per schedule template from GET /schedules, saying
// when it fires next ("next in 4 min · 0 2 * * * (Europe/Berlin)") or that it is disabled.
//
// Context values, for `when` clauses in package.json (`viewItem == …` in view/item/context):
//   schedule.enabled   occurrences fire       (Hold: disables the template)
//   schedule.disabled  held by the user       (Release: enables it again)
//
// Node ids are `schedules.<template id>`: setRoots refreshes only the rows whose text changed,
// so the view can be rendered again every few seconds to move "next in …" on without redrawing
// the rows whose minute did not change.
import * as vscode from 'vscode';
import type { ScheduleSummary } from '../../shared/api';
import { appendField, formatTime, safeMarkdown } from './format';
import type { TreeNode } from './nodeTree';
import { errorNode } from './statsNodes';

const MINUTE_MS = 60_000;

/**
 * How long until an occurrence, to the minute (a schedule's resolution): "< 1 min", "4 min",
 * "5 h 57 min", "2 d 3 h". Minutes are rounded down, so the text never promises later than it is.
 */
export function formatUntil(ms: number): string {
  const minutes = Math.floor(ms / MINUTE_MS);
  if (minutes < 1) return '< 1 min';
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** The row's description: when it fires next (or "disabled"), then the expression and its zone. */
export function describeSchedule(s: ScheduleSummary, now: number): string {
  const cron = s.watch ? `watches ${s.watch.paths.join(', ')}` : `${s.schedule} (${s.timezone})`;
  if (!s.enabled) return `disabled · ${cron}`;
  if (s.watch) return cron;
  if (!s.nextRunAt) return `no next run · ${cron}`;
  const ms = Date.parse(s.nextRunAt) - now;
  // Past due: the engine fires it on its next check (after a poll or when the timer runs).
  return `${ms <= 0 ? 'due now' : `next in ${formatUntil(ms)}`} · ${cron}`;
}

function scheduleTooltip(s: ScheduleSummary): vscode.MarkdownString {
  const tooltip = safeMarkdown();
  tooltip.appendMarkdown('**').appendText(s.id).appendMarkdown('**  \n');
  if (s.watch) {
    appendField(tooltip, 'Watches', s.watch.paths.join(', '));
    appendField(tooltip, 'On change', `${s.watch.onChange} (after ${s.watch.debounceMs} ms without another change)`);
  } else {
    appendField(tooltip, 'Schedule', s.schedule);
    appendField(tooltip, 'Timezone', s.timezone);
    appendField(tooltip, 'Overlap', s.overlap === 'skip' ? 'skip (no occurrence while the previous one is pending)' : 'allow');
  }
  appendField(tooltip, 'State', s.enabled ? 'enabled' : 'disabled (held): no occurrence fires until released');
  appendField(tooltip, 'Next run', s.enabled ? formatTime(s.nextRunAt) : '—');
  appendField(tooltip, 'Last run', s.lastRunAt ? formatTime(s.lastRunAt) : 'never');
  if (s.lastRunAt) appendField(tooltip, 'Last outcome', s.lastOutcome);
  return tooltip;
}

export function scheduleNode(s: ScheduleSummary, now = Date.now()): TreeNode {
  return {
    id: `schedules.${s.id}`,
    label: s.id,
    description: describeSchedule(s, now),
    // Built on hover only (see TreeNode.tooltip); sameContent compares `schedule` instead.
    tooltip: () => scheduleTooltip(s),
    icon: s.enabled ? new vscode.ThemeIcon(s.watch ? 'eye' : 'calendar') : new vscode.ThemeIcon('debug-pause', new vscode.ThemeColor('charts.orange')),
    contextValue: s.enabled ? 'schedule.enabled' : 'schedule.disabled',
    schedule: s,
  };
}

/**
 * The Schedules view's roots, in the engine's order. No schedules (or an engine without them):
 * no rows, so the view's welcome message explains what a schedule is.
 */
export function scheduleNodes(schedules: readonly ScheduleSummary[] | undefined, error?: string, now = Date.now()): TreeNode[] {
  if (!schedules) return error ? [errorNode('schedules', error)] : [];
  return schedules.map((s) => scheduleNode(s, now));
}

// Status view: /status as expandable groups (engine, scanner with its sources, last launch,
// database, server).
import * as vscode from 'vscode';
import type { StatusResponse } from '../../shared/api';
import { formatAgo, formatBytes, formatDuration, formatTime, safeMarkdown } from './format';
import type { TreeNode } from './nodeTree';
import { errorNode } from './statsNodes';

function field(id: string, label: string, value: string | number | boolean | null | undefined, tooltip?: string): TreeNode {
  const text = value === null || value === undefined || value === '' ? '—' : String(value);
  return { id, label, description: text, tooltip: tooltip ?? `${label}: ${text}` };
}

function when(iso: string | null | undefined): string {
  return iso ? `${formatTime(iso)} (${formatAgo(iso)})` : 'never';
}

function group(id: string, label: string, icon: string, children: TreeNode[], description?: string, expanded = true): TreeNode {
  return { id, label, icon: new vscode.ThemeIcon(icon), children: children.length ? children : undefined, description, expanded };
}

export function statusNodes(status: StatusResponse | undefined, error?: string): TreeNode[] {
  if (!status) return error ? [errorNode('status', error)] : [];
  const e = status.engine;
  const s = status.scanner;
  const engine = group('status.engine', 'Engine', 'server-process', [
    field('status.engine.name', 'Name', `${e.name} ${e.version}`),
    field('status.engine.state', 'State', e.state),
    field('status.engine.startedAt', 'Started', when(e.startedAt)),
    field('status.engine.uptime', 'Uptime', formatDuration(e.uptimeMs)),
    field('status.engine.pollInterval', 'Poll interval', `${e.pollIntervalMs} ms`),
    field('status.engine.concurrency', 'Concurrency', e.concurrency),
    field('status.engine.running', 'Running now', e.running),
    field('status.engine.polls', 'Polls', e.polls),
  ], e.state);

  const sources = s.sources.map((src, i): TreeNode => {
    const tooltip = safeMarkdown();
    tooltip.appendMarkdown(`**${src.kind}**  \n`).appendText(src.location);
    if (src.lastError) tooltip.appendMarkdown('\n\n**Last error:** ').appendText(src.lastError);
    const key = `status.scanner.source.${i}.${src.location}`;
    return {
      id: key,
      label: src.location,
      description: src.lastError ? 'error' : `${src.itemsKnown} items`,
      tooltip,
      icon: new vscode.ThemeIcon(
        src.lastError ? 'warning' : 'folder',
        src.lastError ? new vscode.ThemeColor('problemsWarningIcon.foreground') : undefined,
      ),
      expanded: false,
      children: [
        field(`${key}.kind`, 'Kind', src.kind),
        field(`${key}.lastScanAt`, 'Last scan', when(src.lastScanAt)),
        field(`${key}.items`, 'Items', src.itemsKnown),
        field(`${key}.discovered`, 'Discovered since start', src.itemsDiscovered),
        field(`${key}.lastError`, 'Last error', src.lastError ?? 'none'),
      ],
    };
  });
  const scanner = group('status.scanner', 'Scanner', 'search', [
    group('status.scanner.sources', 'Sources', 'folder-library', sources, String(sources.length)),
    field('status.scanner.lastScanAt', 'Last scan', when(s.lastScanAt)),
    field('status.scanner.lastScanDuration', 'Last scan took', formatDuration(s.lastScanDurationMs)),
    field('status.scanner.scans', 'Scans since start', s.scans),
    field('status.scanner.discovered', 'Discovered since start', s.itemsDiscovered),
    field('status.scanner.rejected', 'Rejected since start', s.itemsRejected),
  ]);

  const l = status.lastLaunch;
  const lastLaunch = l
    ? group('status.lastLaunch', 'Last launch', 'rocket', [
        field('status.lastLaunch.item', 'Item', l.name === l.itemId ? l.itemId : `${l.name} (${l.itemId})`),
        field('status.lastLaunch.attempt', 'Attempt', l.attempt),
        field('status.lastLaunch.outcome', 'Outcome', l.outcome),
        field('status.lastLaunch.startedAt', 'Started', when(l.startedAt)),
        field('status.lastLaunch.finishedAt', 'Finished', l.finishedAt ? when(l.finishedAt) : '—'),
        field('status.lastLaunch.duration', 'Duration', formatDuration(l.durationMs)),
        field('status.lastLaunch.exit', 'Exit', l.signal ? `signal ${l.signal}` : l.exitCode ?? '—'),
        ...(l.error ? [field('status.lastLaunch.error', 'Error', l.error)] : []),
      ], l.outcome)
    : group('status.lastLaunch', 'Last launch', 'rocket', [], 'none yet');

  const d = status.database;
  const database = group('status.database', 'Database', 'database', [
    field('status.database.path', 'Path', d.path),
    field('status.database.size', 'Size', formatBytes(d.sizeBytes)),
    field('status.database.lastPersistAt', 'Last persisted', when(d.lastPersistAt)),
    ...(d.lastError ? [field('status.database.lastError', 'Last error', d.lastError)] : []),
  ], d.lastError ? 'error' : 'ok', false);

  const server = group('status.server', 'Server', 'globe', [field('status.server.url', 'URL', status.server.url)], undefined, false);

  const nodes = [engine, scanner, lastLaunch, database, server];
  if (error) nodes.push(errorNode('status', error));
  return nodes;
}

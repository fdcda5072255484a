// Every id the extension shares with package.json, in one place. test/extension checks that each
// command contributed in package.json is registered, and these names are what it registers.

export const EXTENSION_ID = 'engine-monitor.engine-monitor';
export const CONFIG_SECTION = 'engineMonitor';

export const Commands = {
  showStatus: 'engineMonitor.showStatus',
  start: 'engineMonitor.start',
  stop: 'engineMonitor.stop',
  restart: 'engineMonitor.restart',
  pollNow: 'engineMonitor.pollNow',
  filterLogs: 'engineMonitor.filterLogs',
  clearLogFilter: 'engineMonitor.clearLogFilter',
  refresh: 'engineMonitor.refresh',
  copyEndpointUrl: 'engineMonitor.copyEndpointUrl',
  openQueueFolder: 'engineMonitor.openQueueFolder',
  addItem: 'engineMonitor.addItem',
  retryItem: 'engineMonitor.retryItem',
  retryAllFailed: 'engineMonitor.retryAllFailed',
  // Additions beyond the contract's list (the contract leaves them to us):
  createQueueFolder: 'engineMonitor.createQueueFolder',
  showItemLogs: 'engineMonitor.showItemLogs',
} as const;
export type CommandId = (typeof Commands)[keyof typeof Commands];

export const Views = {
  container: 'engineMonitor',
  stats: 'engineMonitor.stats',
  health: 'engineMonitor.health',
  status: 'engineMonitor.status',
  logs: 'engineMonitor.logs',
  items: 'engineMonitor.items',
} as const;

/** Context keys used in package.json `when` clauses. */
export const ContextKeys = {
  activated: 'engineMonitor.activated',
  hasQueueFolder: 'engineMonitor.hasQueueFolder',
  /** 'off' | 'starting' | 'running' | 'attached' | 'failed' */
  hostState: 'engineMonitor.hostState',
  connected: 'engineMonitor.connected',
  /** checks.engine of /health, or '' while unknown */
  engineState: 'engineMonitor.engineState',
  logFilterActive: 'engineMonitor.logFilterActive',
  hasFailedItems: 'engineMonitor.hasFailedItems',
} as const;

export const STATUS_BAR_ID = 'engineMonitor.health';

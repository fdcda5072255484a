// Every id the extension shares with package.json, in one place. test/extension checks that each
// command contributed in package.json is registered, and these names are what it registers.

export const EXTENSION_ID = 'engine-monitor.engine-monitor';
export { SETTINGS_SECTION as CONFIG_SECTION } from '../shared/settings';

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
  setRemoteToken: 'engineMonitor.setRemoteToken',
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
  /** 'off' | 'starting' | 'running' | 'attached' | 'remote' | 'failed' */
  hostState: 'engineMonitor.hostState',
  connected: 'engineMonitor.connected',
  /** checks.engine of /health, or '' while unknown */
  engineState: 'engineMonitor.engineState',
  logFilterActive: 'engineMonitor.logFilterActive',
  hasFailedItems: 'engineMonitor.hasFailedItems',
  /** Why /events is not connected: '' | 'unauthorized' | 'forbidden' | 'unreachable' | 'http' */
  connectionProblem: 'engineMonitor.connectionProblem',
} as const;

/** SecretStorage key of the remote engine's token (never a setting: settings files are plain text). */
export const REMOTE_TOKEN_SECRET = 'engineMonitor.remote.token';

export const STATUS_BAR_ID = 'engineMonitor.health';

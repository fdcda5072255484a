// Every id the extension shares with package.json, in one place. test/unit/commands.test.ts
// checks that Commands and Views are exactly what package.json contributes and that every command
// link in it names one of them; container.ts registers a handler for each, from the feature files
// in commands/ (the map it joins is keyed by CommandId), and test/extension checks the
// registration at run time.

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
  createQueueFolder: 'engineMonitor.createQueueFolder',
  showItemLogs: 'engineMonitor.showItemLogs',
  setRemoteToken: 'engineMonitor.setRemoteToken',
  setStorePassword: 'engineMonitor.setStorePassword',
  showOutput: 'engineMonitor.showOutput',
  cancelItem: 'engineMonitor.cancelItem',
  holdItem: 'engineMonitor.holdItem',
  releaseItem: 'engineMonitor.releaseItem',
  findItem: 'engineMonitor.findItem',
  openInTerminal: 'engineMonitor.openInTerminal',
  queueTask: 'engineMonitor.queueTask',
  restartItem: 'engineMonitor.restartItem',
  compareOutput: 'engineMonitor.compareOutput',
  installCli: 'engineMonitor.installCli',
  removeItem: 'engineMonitor.removeItem',
  clearFinished: 'engineMonitor.clearFinished',
  runAgain: 'engineMonitor.runAgain',
  showMoreItems: 'engineMonitor.showMoreItems',
} as const;
export type CommandId = (typeof Commands)[keyof typeof Commands];

export const Views = {
  container: 'engineMonitor',
  stats: 'engineMonitor.stats',
  health: 'engineMonitor.health',
  status: 'engineMonitor.status',
  logs: 'engineMonitor.logs',
  items: 'engineMonitor.items',
  schedules: 'engineMonitor.schedules',
  fleet: 'engineMonitor.fleet',
} as const;

/** Context keys used in package.json `when` clauses. */
export const ContextKeys = {
  activated: 'engineMonitor.activated',
  hasQueueFolder: 'engineMonitor.hasQueueFolder',
  /** 'off' | 'starting' | 'running' | 'attached' | 'remote' | 'failed' */
  hostState: 'engineMonitor.hostState',
  connected: 'engineMonitor.connected',
  /**
   * The views know what to show: connected with the engine's first answers in (see
   * EngineModel.loaded), or settled without an engine (off, failed, remote). Until then every
   * view's welcome says "Connecting to the engine…", never an empty state.
   */
  loaded: 'engineMonitor.loaded',
  /** checks.engine of /health, or '' while unknown */
  engineState: 'engineMonitor.engineState',
  logFilterActive: 'engineMonitor.logFilterActive',
  hasFailedItems: 'engineMonitor.hasFailedItems',
  /**
   * The engine knows at least one item (stats.total > 0): completes the walkthrough's "Add your
   * first item", and keeps the Items view's "No items yet" away (see hasSchedules).
   */
  hasItems: 'engineMonitor.hasItems',
  /**
   * The engine holds schedule templates / the Logs view holds entries. With hasItems, these gate the
   * views' empty states ("No schedules", "No log entries yet"): a view whose rows the window is
   * still fetching or drawing after a reload is blank for a moment, never "empty" while the engine
   * has data (the `loaded` key can reach the window before the rows do).
   */
  hasSchedules: 'engineMonitor.hasSchedules',
  hasLogs: 'engineMonitor.hasLogs',
  /** The engine has launched something (stats.totalLaunches > 0): completes the walkthrough's "See it launched". */
  hasLaunched: 'engineMonitor.hasLaunched',
  /** /status lists more than one engine: shows the Fleet view. */
  fleet: 'engineMonitor.fleet',
  /** Why /events is not connected: '' | 'unauthorized' | 'forbidden' | 'unreachable' | 'http' */
  connectionProblem: 'engineMonitor.connectionProblem',
} as const;

/** SecretStorage key of the PostgreSQL store's password (never a setting: settings files are plain text). */
export const STORE_PASSWORD_SECRET = 'engineMonitor.store.password';

/** SecretStorage key of the remote engine's token (never a setting: settings files are plain text). */
export const REMOTE_TOKEN_SECRET = 'engineMonitor.remote.token';

export const STATUS_BAR_ID = 'engineMonitor.health';

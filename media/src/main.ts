// The "Show Engine Status" dashboard webview. It reads nothing itself: it asks the extension
// host (src/extension/dashboard) over the typed protocol in src/shared/webviewProtocol.ts and
// renders every engine string as text.
import type { EngineState, LogAction } from '../../src/shared/api';
import { DASHBOARD_COMMANDS, type ConnectionInfo, type ConnectionPhase, type DashboardCommand, type DashboardState, type LiveEvent } from '../../src/shared/webviewProtocol';
import { LaunchChart } from './chart';
import { h, icon, replaceChildren } from './dom';
import { AttentionView } from './attention';
import { UpcomingView } from './upcoming';
import { ItemDetailView } from './itemDetail';
import { LogTable } from './logTable';
import { OverviewView, refreshTimes } from './overview';
import { query, runCommand, settle } from './rpc';
import { onHostMessage, vscodeApi } from './vscodeApi';

const STATUS_REFRESH_MS = 5_000;
const STATUS_THROTTLE_MS = 1_500;
/** Log actions after which /status (last launch, scanner, running) has news. */
const STATUS_ACTIONS = new Set<LogAction>([
  'launch_started',
  'launch_succeeded',
  'launch_failed',
  'launch_interrupted',
  'item_discovered',
  'item_rejected',
  'source_error',
  'engine_started',
  'engine_stopped',
]);

const state: DashboardState = vscodeApi.getState() ?? { filter: {}, scrollY: 0, logScrollTop: 0 };
const saveState = () => vscodeApi.setState(state);

// Until the extension's first word the panel knows nothing: it says "connecting", offers no Start.
let connection: ConnectionInfo = { connected: false, baseUrl: undefined, phase: 'connecting' };
let engineState: EngineState | undefined;
/**
 * The engine's own overview has been read since the stream connected. Until then the panel says
 * "connecting", not "live": a badge saying live beside cards that still say "—" is wrong.
 */
let overviewLoaded = false;
let restoredScroll = false;

// ---- layout ----
const statusLine = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
const connectionPill = h('span', { class: 'connection', 'data-connected': 'pending' });
const banner = h('div', { class: 'banner', hidden: true });

const buttons: Record<DashboardCommand | 'refresh', HTMLButtonElement> = {
  start: h('button', { type: 'button', 'data-command': 'start' }, icon('play'), 'Start'),
  stop: h('button', { type: 'button', class: 'secondary', 'data-command': 'stop' }, icon('debug-stop'), 'Stop'),
  pollNow: h('button', { type: 'button', class: 'secondary', 'data-command': 'pollNow' }, icon('sync'), 'Poll now'),
  refresh: h('button', { type: 'button', class: 'secondary', 'data-command': 'refresh', title: 'Read everything again' }, icon('refresh'), 'Refresh'),
};
const COMMAND_DONE: Record<DashboardCommand, string> = {
  start: 'Engine start requested.',
  stop: 'Engine stop requested.',
  pollNow: 'Poll requested.',
};

const overview = new OverviewView();
const chart = new LaunchChart();
const logs = new LogTable(
  state.filter,
  (filter) => {
    state.filter = filter;
    saveState();
  },
  (message) => announce(`Error: ${message}`, true),
  (itemId) => void detail.open(itemId),
);
const attention = new AttentionView((itemId) => void detail.open(itemId));
const upcoming = new UpcomingView();
const detail = new ItemDetailView(
  (itemId) => {
    state.detailItemId = itemId;
    saveState();
  },
  (message) => announce(`Error: ${message}`, true),
);

const app = document.getElementById('app')!;
replaceChildren(
  app,
  h(
    'header',
    { class: 'top' },
    h('h1', {}, 'Engine Status'),
    connectionPill,
    h('div', { class: 'actions', role: 'toolbar', 'aria-label': 'Engine commands' }, ...Object.values(buttons)),
  ),
  statusLine,
  banner,
  overview.cards,
  h(
    'div',
    { class: 'row' },
    overview.health,
    h('section', { class: 'panel chart-panel', 'aria-labelledby': 'chart-title' }, h('h2', { id: 'chart-title' }, 'Launches per minute, last hour'), legend(), chart.element),
  ),
  overview.details,
  attention.element,
  upcoming.element,
  detail.element,
  logs.element,
);
app.removeAttribute('aria-busy');

function legend(): HTMLElement {
  return h(
    'p',
    { class: 'legend', 'aria-hidden': 'true' },
    h('span', { class: 'swatch started' }),
    'attempts started ',
    h('span', { class: 'swatch failed' }),
    'attempts failed',
  );
}

// ---- behaviour ----
function announce(text: string, error = false): void {
  statusLine.textContent = text;
  statusLine.classList.toggle('error-text', error);
}

function phaseOf(c: ConnectionInfo): ConnectionPhase {
  return c.phase ?? (c.connected ? 'live' : c.baseUrl ? 'unreachable' : 'off');
}

/** What the panel says: an engine that was live and dropped is "not reachable" until the host knows more. */
let phase: ConnectionPhase = 'connecting';

function updateButtons(): void {
  const live = connection.connected;
  // Start is offered only once the panel knows: the engine said it is not running, or none runs.
  // While one starts or is being reached, a Start button would invite starting a second one.
  buttons.start.hidden = !(phase === 'off' || (live && engineState !== undefined));
  buttons.start.disabled = live && engineState === 'running';
  buttons.stop.disabled = !live || engineState === 'stopped';
  buttons.pollNow.disabled = !live || engineState !== 'running';
  buttons.refresh.disabled = !live;
}

function updatePill(): void {
  const shown = phase === 'live' && !overviewLoaded ? 'connecting' : phase;
  const look: Record<ConnectionPhase, [connected: string, codicon: string, text: string]> = {
    connecting: ['pending', 'loading', 'connecting…'],
    live: ['true', 'circle-filled', 'live'],
    unreachable: ['false', 'circle-slash', 'not connected'],
    off: ['false', 'circle-slash', 'engine off'],
  };
  const [connected, codicon, text] = look[shown];
  connectionPill.dataset.connected = connected;
  const glyph = icon(codicon);
  if (shown === 'connecting') glyph.classList.add('codicon-modifier-spin');
  replaceChildren(connectionPill, glyph, text);
}

function applyConnection(c: ConnectionInfo, initial: boolean): void {
  const wasConnected = connection.connected;
  connection = c;
  phase = wasConnected && !c.connected && phaseOf(c) === 'connecting' ? 'unreachable' : phaseOf(c);
  if (c.connected) {
    banner.hidden = true;
    document.body.classList.remove('offline');
    if (initial || !wasConnected) {
      overviewLoaded = false;
      if (!initial) announce('Engine reachable again.');
      loadAll();
    }
  } else {
    engineState = undefined;
    overviewLoaded = false;
    document.body.classList.add('offline');
    const text =
      phase === 'connecting'
        ? 'Connecting to the engine…'
        : phase === 'unreachable'
          ? `Engine not reachable${c.baseUrl ? ` at ${c.baseUrl}` : ''}. Numbers are hidden until it answers again.`
          : 'No engine is running. Start it with "Engine Monitor: Start", or open a workspace folder.';
    replaceChildren(banner, icon(phase === 'connecting' ? 'loading' : 'debug-disconnect'), h('span', {}, text));
    banner.hidden = false;
    overview.clear(phase === 'connecting' ? 'Connecting to the engine…' : undefined);
    attention.clear();
    upcoming.clear();
    logs.showUnavailable(phase === 'connecting' ? 'Connecting to the engine…' : 'Engine not reachable.');
    if (phase !== 'connecting' && (!initial || wasConnected)) announce('Engine not reachable.');
  }
  updatePill();
  updateButtons();
}

function loadAll(): void {
  void refreshOverview();
  void loadTimeline();
  void logs.reload().then(restoreScroll);
  if (detail.openItemId) void detail.reload();
  else if (state.detailItemId) void detail.open(state.detailItemId, { reveal: false }); // restoreScroll places the page
}

function restoreScroll(): void {
  if (restoredScroll) return;
  restoredScroll = true;
  window.scrollTo(0, state.scrollY);
  logs.scrollTop = state.logScrollTop;
}

async function loadTimeline(): Promise<void> {
  chart.beginLoad();
  try {
    chart.load(await query('timeline', { since: LaunchChart.windowStart().toISOString() }));
  } catch (err) {
    announce(`Could not read launch history: ${(err as Error).message}`, true);
  }
}

let overviewInFlight = false;
async function refreshOverview(): Promise<void> {
  if (!connection.connected || overviewInFlight) return;
  overviewInFlight = true;
  try {
    const o = await query('overview', {});
    if (!connection.connected) return;
    overview.setStatus(o.status);
    overview.setHealth(o.health);
    overview.setStats(o.status.stats);
    // The badge and the buttons follow the numbers and the engine check just shown, together and
    // at once: the two reads below take their time, and meanwhile a Start button beside
    // "connecting…" (or still on beside "running") would be a guess.
    engineState = o.health.checks.engine;
    overviewLoaded = true;
    updatePill();
    updateButtons();
    attention.set(await query('attention', {}));
    upcoming.set(await query('upcoming', {}));
    if (statusLine.classList.contains('error-text')) announce('');
  } catch (err) {
    announce(`Could not read the engine status: ${(err as Error).message}`, true);
  } finally {
    overviewInFlight = false;
  }
}

let statusTimer: ReturnType<typeof setTimeout> | undefined;
function scheduleStatusRefresh(): void {
  statusTimer ??= setTimeout(() => {
    statusTimer = undefined;
    void refreshOverview();
  }, STATUS_THROTTLE_MS);
}

function onEvent(event: LiveEvent): void {
  if (!connection.connected) return;
  switch (event.name) {
    case 'stats':
      overview.setStats(event.data);
      // Counters moved: an item started, finished or failed.
      scheduleStatusRefresh();
      return;
    case 'health':
      overview.setHealth(event.data);
      engineState = event.data.checks.engine;
      updateButtons();
      announce(`Health: ${event.data.status}.`);
      scheduleStatusRefresh();
      return;
    case 'log':
      chart.add(event.data);
      logs.addLive(event.data);
      detail.addLive(event.data);
      if (STATUS_ACTIONS.has(event.data.action)) scheduleStatusRefresh();
      return;
  }
}

async function run(command: DashboardCommand): Promise<void> {
  const button = buttons[command];
  button.disabled = true;
  try {
    await runCommand(command);
    announce(COMMAND_DONE[command]);
  } catch (err) {
    announce(`${button.textContent} failed: ${(err as Error).message}`, true);
  } finally {
    updateButtons();
    scheduleStatusRefresh();
  }
}

for (const command of DASHBOARD_COMMANDS) buttons[command].addEventListener('click', () => void run(command));
buttons.refresh.addEventListener('click', () => loadAll());

let scrollFrame = 0;
function saveScroll(): void {
  if (scrollFrame) return;
  scrollFrame = requestAnimationFrame(() => {
    scrollFrame = 0;
    state.scrollY = window.scrollY;
    state.logScrollTop = logs.scrollTop;
    saveState();
  });
}
window.addEventListener('scroll', saveScroll, { passive: true });
logs.onScroll(saveScroll);

setInterval(() => refreshTimes(document), 1_000);
setInterval(() => {
  if (document.visibilityState === 'visible') void refreshOverview();
}, STATUS_REFRESH_MS);

onHostMessage((message) => {
  if (settle(message)) return;
  switch (message.type) {
    case 'init':
      applyConnection(message.connection, true);
      return;
    case 'connection':
      applyConnection(message.connection, false);
      return;
    case 'events':
      for (const event of message.events) onEvent(event);
      return;
  }
});
overview.clear('Connecting to the engine…');
updatePill();
updateButtons();
saveState();
vscodeApi.postMessage({ type: 'ready' });

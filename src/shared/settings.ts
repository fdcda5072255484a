// The extension's settings in one table: type, default, bounds and the text the settings editor
// shows. VS Code reads package.json's contributes.configuration, the code reads this table, and
// test/unit/settings.test.ts keeps the two saying the same. `engine-monitor serve` takes the same
// values as flags; its defaults and bounds come from here too, so a value one side accepts the
// other accepts as well (the extension passes its settings to the engine host as those flags).

interface SettingBase {
  markdownDescription: string;
  /** The `engine-monitor serve` flag (without `--`) that carries the same value. */
  flag?: string;
}
export interface IntegerSetting extends SettingBase {
  type: 'integer';
  default: number;
  minimum: number;
  maximum: number;
}
export interface StringSetting extends SettingBase {
  type: 'string';
  default: string;
  /** Shown by the settings editor only; the code checks such values itself, with a message. */
  pattern?: string;
  patternErrorMessage?: string;
}
export interface BooleanSetting extends SettingBase {
  type: 'boolean';
  default: boolean;
}
export interface StringListSetting extends SettingBase {
  type: 'array';
  items: { type: 'string' };
  default: readonly string[];
}
export type SettingSpec = IntegerSetting | StringSetting | BooleanSetting | StringListSetting;

export const SETTINGS_SECTION = 'engineMonitor';

const DAY_MS = 86_400_000;

export const SETTINGS = {
  'server.port': {
    type: 'integer',
    default: 7411,
    minimum: 0,
    maximum: 65535,
    flag: 'port',
    markdownDescription: "Port of the engine's HTTP API. If it is taken, a free port is used and you are told. `0` picks any free port.",
  },
  'server.host': {
    type: 'string',
    default: '127.0.0.1',
    flag: 'host',
    markdownDescription: "Address the engine's HTTP API binds to. Loopback by default; any other address requires `#engineMonitor.server.token#`.",
  },
  'server.token': {
    type: 'string',
    default: '',
    flag: 'token',
    markdownDescription: 'Bearer token every API request must carry (`Authorization: Bearer <token>`). Empty: no token. Integrated terminals get it as `ENGINE_MONITOR_TOKEN`.',
  },
  'engine.autoStart': {
    type: 'boolean',
    default: true,
    markdownDescription: 'Start the engine when a workspace with a queue folder opens.',
  },
  'engine.keepAliveSeconds': {
    type: 'integer',
    default: 60,
    minimum: 0,
    maximum: 86_400,
    markdownDescription:
      "How long the engine keeps running, in seconds, once no VS Code window is attached to it and no attempt is running. A reload or a closed window only detaches: running attempts go on, and the next window on this workspace attaches to the same engine. Applies from the engine's next start.",
  },
  'engine.pollIntervalMs': {
    type: 'integer',
    default: 2000,
    minimum: 10,
    maximum: DAY_MS,
    flag: 'poll-interval',
    markdownDescription: 'How often the scanner polls the item sources, in milliseconds.',
  },
  'engine.concurrency': {
    type: 'integer',
    default: 4,
    minimum: 1,
    maximum: 256,
    flag: 'concurrency',
    markdownDescription: 'How many items may run at the same time.',
  },
  'engine.maxAttempts': {
    type: 'integer',
    default: 3,
    minimum: 1,
    maximum: 100,
    flag: 'max-attempts',
    markdownDescription: 'Attempts per item before it is failed, unless the item sets `maxAttempts`.',
  },
  'engine.timeoutMs': {
    type: 'integer',
    default: 600000,
    minimum: 1,
    maximum: DAY_MS,
    flag: 'timeout',
    markdownDescription: 'Time an attempt may run before it is stopped and counted as failed, unless the item sets `timeoutMs`, in milliseconds.',
  },
  'queue.directory': {
    type: 'string',
    default: '.engine/queue',
    flag: 'queue-dir',
    markdownDescription: 'Folder, relative to each workspace folder, whose `*.json` and `*.jsonl` files hold the items to launch.',
  },
  'logs.maxEntries': {
    type: 'integer',
    default: 100000,
    minimum: 1,
    maximum: 100_000_000,
    flag: 'log-max-entries',
    markdownDescription: 'Log entries kept; older ones are pruned in the background.',
  },
  'logs.maxAgeDays': {
    type: 'integer',
    default: 14,
    minimum: 1,
    maximum: 36_500,
    flag: 'log-max-age-days',
    markdownDescription: 'Days a log entry is kept; older ones are pruned in the background.',
  },
  'output.maxBytesPerAttempt': {
    type: 'integer',
    default: 10 * 1024 * 1024,
    minimum: 64 * 1024,
    maximum: 1024 * 1024 * 1024,
    flag: 'output-max-bytes',
    markdownDescription:
      "Bytes of each attempt's output (stdout and stderr) kept in the storage folder. Beyond it the first quarter and the last three quarters are kept, joined by one line saying how many bytes were dropped.",
  },
  'output.maxTotalMB': {
    type: 'integer',
    default: 1024,
    minimum: 1,
    maximum: 1024 * 1024,
    flag: 'output-max-total-mb',
    markdownDescription: "MiB of attempt output kept in all: beyond it the oldest attempts' output is deleted (their log entries stay).",
  },
  'output.compareMasks': {
    type: 'array',
    items: { type: 'string' },
    // Date-times (ISO 8601 and the common log form), times of day, and durations with a unit.
    default: [
      '\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2}(:\\d{2}([.,]\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?',
      '\\b\\d{1,2}:\\d{2}:\\d{2}([.,]\\d+)?\\b',
      '\\b\\d+([.,]\\d+)?\\s?(ns|µs|us|ms|s|sec|secs|seconds?|min|mins|minutes?|h|hours?)\\b',
    ],
    markdownDescription:
      'Regular expressions (JavaScript syntax) whose matches **Compare Output with Last Success** replaces by `…` on both sides, so that timestamps and durations do not show as changes. The defaults mask date-times, times of day and durations such as `120 ms` or `1.5s`. An empty list compares the output as it is; a pattern that is not a valid regular expression is skipped, with a warning.',
  },
  'remote.url': {
    type: 'string',
    default: '',
    pattern: '^(https?://\\S+)?$',
    patternErrorMessage: 'An http:// or https:// URL, or empty.',
    markdownDescription:
      'Base URL of a headless engine to monitor instead of running one in this window, e.g. `http://127.0.0.1:7411` (an engine started with `engine-monitor serve` on another machine or in a container). Empty: run the engine here. Its token is not a setting: run **Engine Monitor: Set Remote Engine Token…** (kept in VS Code\'s secret storage). Control commands (start, stop, poll, retry, cancel, hold, release) reach it over HTTP, which that engine allows only when it was started with a token.',
  },
  'hooks.onItemFailed': {
    type: 'string',
    default: '',
    flag: 'on-item-failed',
    markdownDescription:
      'Command line run (by `/bin/sh -c`, in the first workspace folder) when an item fails for good; it gets the event as JSON on stdin and `ENGINE_MONITOR_URL`, `ENGINE_HOOK_EVENT` in its environment. Empty: none. Not used in Restricted Mode.',
  },
  'hooks.onHealthChange': {
    type: 'string',
    default: '',
    flag: 'on-health-change',
    markdownDescription:
      "Command line run (by `/bin/sh -c`, in the first workspace folder) when the engine's `/health` changes status or a check; it gets the event as JSON on stdin. Empty: none. Not used in Restricted Mode.",
  },
  'store.url': {
    type: 'string',
    default: '',
    flag: 'store',
    pattern: '^(postgres(ql)?://\\S+)?$',
    patternErrorMessage: 'A postgres:// URL (without its password), or empty.',
    markdownDescription:
      "PostgreSQL database this window's engine shares with a fleet of engines (`postgres://user@host:5432/db`; see docs/FLEET.md). Empty: the engine's own embedded database. The password is never a setting: set it with **Engine Monitor: Set Store Password…** (kept in VS Code's secret storage), or use `~/.pgpass`. Not used in Restricted Mode.",
  },
  'hooks.notifyUrl': {
    type: 'string',
    default: '',
    flag: 'notify-url',
    pattern: '^(https?://\\S+)?$',
    patternErrorMessage: 'An http:// or https:// URL, or empty.',
    markdownDescription:
      'URL every hook event (an item failed for good, health changed) is POSTed to as JSON, with 3 tries and a 5 s timeout each. Empty: none. Not used in Restricted Mode.',
  },
  'hooks.timeoutMs': {
    type: 'integer',
    default: 10_000,
    minimum: 100,
    maximum: 600_000,
    flag: 'hook-timeout',
    markdownDescription: 'Time a hook command may run before its process group is sent SIGTERM (then SIGKILL after 2 s), in milliseconds.',
  },
} as const satisfies Record<string, SettingSpec>;

export type SettingKey = keyof typeof SETTINGS;
type Spec<K extends SettingKey> = (typeof SETTINGS)[K];
/** Integer settings the CLI takes as a flag with the same default (keepAliveSeconds has none: headless never stops). */
export type IntegerSettingKey = { [K in SettingKey]: Spec<K>['type'] extends 'integer' ? (Spec<K> extends { flag: string } ? K : never) : never }[SettingKey];
/** The settings `engine-monitor serve` also takes as a flag. */
export type FlagSettingKey = { [K in SettingKey]: Spec<K> extends { flag: string } ? K : never }[SettingKey];
export type SettingValue<K extends SettingKey> = Spec<K>['type'] extends 'integer'
  ? number
  : Spec<K>['type'] extends 'string'
    ? string
    : Spec<K>['type'] extends 'array'
      ? readonly string[]
      : boolean;

/**
 * A setting's value as read, or its default when the value is missing, of the wrong type or out
 * of bounds: settings files are edited by hand, and a bad value must not stop the engine.
 */
export function settingValue<K extends SettingKey>(key: K, value: unknown): SettingValue<K> {
  const spec: SettingSpec = SETTINGS[key];
  return (isValid(spec, value) ? value : spec.default) as SettingValue<K>;
}

function isValid(spec: SettingSpec, value: unknown): boolean {
  switch (spec.type) {
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value) && value >= spec.minimum && value <= spec.maximum;
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value) && value.every((v) => typeof v === 'string');
  }
}

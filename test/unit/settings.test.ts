// The settings table against the two other places that state it: package.json (what VS Code's
// settings editor shows and validates) and the CLI's flags (what the engine host accepts, including
// the host the extension forks with those settings). Plain Node, no engine started.
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import manifest from '../../package.json';
import { parseServeArgs, UsageError, type CliOptions } from '../../src/host/args';
import {
  SETTINGS,
  SETTINGS_SECTION,
  settingValue,
  type IntegerSettingKey,
  type SettingKey,
  type SettingSpec,
} from '../../src/shared/settings';

const properties = manifest.contributes.configuration.properties as Record<string, Record<string, unknown>>;
const keys = Object.keys(SETTINGS) as SettingKey[];
const integerKeys = keys.filter((k): k is IntegerSettingKey => SETTINGS[k].type === 'integer' && 'flag' in SETTINGS[k]);

/** Where parseServeArgs puts each integer setting's flag. */
const CLI_FIELD: Record<IntegerSettingKey, keyof CliOptions | ((o: CliOptions) => number)> = {
  'server.port': 'port',
  'engine.pollIntervalMs': 'pollIntervalMs',
  'engine.concurrency': 'concurrency',
  'engine.maxAttempts': 'maxAttempts',
  'engine.timeoutMs': 'timeoutMs',
  'logs.maxEntries': 'logMaxEntries',
  'logs.maxAgeDays': 'logMaxAgeDays',
  'output.maxBytesPerAttempt': 'outputMaxBytes',
  'output.maxTotalMB': 'outputMaxTotalMB',
  'hooks.timeoutMs': (o) => o.hooks!.timeoutMs,
};
const cliValue = (o: CliOptions, key: IntegerSettingKey): unknown => {
  const field = CLI_FIELD[key];
  return typeof field === 'function' ? field(o) : o[field];
};

const serve = (...flags: string[]) => parseServeArgs(['serve', '--workspace', tmpdir(), ...flags]);

describe('Settings table', () => {
  describe('package.json contributes.configuration', () => {
    it('contributes exactly the settings in the table', () => {
      assert.deepEqual(Object.keys(properties).sort(), keys.map((k) => `${SETTINGS_SECTION}.${k}`).sort());
    });

    for (const key of keys) {
      it(`${key}: same type, default, bounds and description`, () => {
        const { flag: _flag, ...spec }: SettingSpec = SETTINGS[key];
        // Every setting is per window: each window runs (or attaches to) its own engine.
        const { scope, ...contributed } = properties[`${SETTINGS_SECTION}.${key}`];
        assert.equal(scope, 'window');
        assert.deepEqual(contributed, spec);
      });
    }

    it('restricts only settings that exist', () => {
      for (const name of manifest.capabilities.untrustedWorkspaces.restrictedConfigurations) {
        assert.ok(name in properties, `${name} is restricted but not contributed`);
      }
    });
  });

  describe('the CLI', () => {
    it('defaults to the table', () => {
      const options = serve();
      for (const key of integerKeys) assert.equal(cliValue(options, key), SETTINGS[key].default, key);
      assert.equal(options.host, SETTINGS['server.host'].default);
      assert.equal(options.queueDirectory, SETTINGS['queue.directory'].default);
    });

    for (const key of integerKeys) {
      const { flag, minimum, maximum } = SETTINGS[key];
      it(`--${flag} accepts ${minimum} to ${maximum}, like ${key}`, () => {
        assert.equal(cliValue(serve(`--${flag}=${minimum}`), key), minimum);
        assert.equal(cliValue(serve(`--${flag}=${maximum}`), key), maximum);
        const message = new RegExp(`^--${flag} must be a whole number from ${minimum} to ${maximum}, got `);
        for (const outside of [minimum - 1, maximum + 1]) {
          assert.throws(() => serve(`--${flag}=${outside}`), (err: Error) => err instanceof UsageError && message.test(err.message));
        }
      });
    }
  });

  describe('CLI-only flags', () => {
    it('--launch-helpers takes 1 to 16; without it the engine picks its pool size', () => {
      assert.equal(serve().launchHelpers, undefined);
      assert.equal(serve('--launch-helpers=1').launchHelpers, 1);
      assert.equal(serve('--launch-helpers=16').launchHelpers, 16);
      for (const bad of ['0', '17', 'two']) {
        assert.throws(() => serve(`--launch-helpers=${bad}`), (err: Error) => err instanceof UsageError && /^--launch-helpers must be a whole number from 1 to 16, got /.test(err.message));
      }
    });
  });

  describe('settingValue', () => {
    it('keeps a value of the right type within bounds', () => {
      assert.equal(settingValue('engine.pollIntervalMs', 10), 10);
      assert.equal(settingValue('logs.maxAgeDays', 36_500), 36_500);
      assert.equal(settingValue('server.host', '0.0.0.0'), '0.0.0.0');
      assert.equal(settingValue('engine.autoStart', false), false);
    });

    it('falls back to the default when a value is missing, of the wrong type or out of bounds', () => {
      for (const key of integerKeys) {
        const { default: fallback, minimum, maximum } = SETTINGS[key];
        for (const bad of [undefined, null, '5', 1.5, minimum - 1, maximum + 1]) assert.equal(settingValue(key, bad), fallback, `${key} = ${bad}`);
      }
      assert.equal(settingValue('server.token', 42), '');
      assert.equal(settingValue('engine.autoStart', 'false'), true);
    });
  });
});

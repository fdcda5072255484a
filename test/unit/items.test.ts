// Queue items: what parseItem accepts, the reason it gives for what it rejects (naming the field
// to fix), the working directory kept inside the workspace folder, and derived ids and hashes.
import * as assert from 'node:assert/strict';
import path from 'node:path';
import { definitionHash, deriveItemId, isInside, parseItem, type ItemDefinition, type ItemResult } from '../../src/core/intake/items';

const WORKSPACE = path.resolve('/tmp/engine-monitor-items-test/ws');
const DEFAULTS = { timeoutMs: 600_000, maxAttempts: 3 };

function parse(entry: unknown, relPath = '.engine/queue/jobs.json', index = 0): ItemResult {
  return parseItem(entry, { workspaceFolder: WORKSPACE, relPath, index, defaults: DEFAULTS });
}

function accepted(entry: unknown): ItemDefinition {
  const r = parse(entry);
  assert.ok(r.ok, `expected ${JSON.stringify(entry)} to be accepted, got: ${r.ok ? '' : r.reason}`);
  return r.item;
}

function rejected(entry: unknown): string {
  const r = parse(entry);
  assert.ok(!r.ok, `expected ${JSON.stringify(entry)} to be rejected`);
  return r.reason;
}

describe('parseItem', () => {
  it('resolves every default of a command-only item', () => {
    const item = accepted({ command: 'echo' });
    assert.deepEqual(item, {
      id: deriveItemId('.engine/queue/jobs.json', 0),
      name: item.id,
      command: 'echo',
      args: [],
      shell: false,
      cwd: WORKSPACE,
      env: {},
      timeoutMs: DEFAULTS.timeoutMs,
      maxAttempts: DEFAULTS.maxAttempts,
      runAt: null,
    });
  });

  it('keeps what the item says over the defaults', () => {
    const item = accepted({
      id: 'nightly-report',
      name: 'Nightly report',
      command: 'node',
      args: ['report.js', '--all'],
      cwd: 'tools/report',
      env: { MODE: 'full' },
      timeoutMs: 5000,
      maxAttempts: 7,
      runAt: '2024-05-01T12:30:00+02:00',
    });
    assert.deepEqual(item, {
      id: 'nightly-report',
      name: 'Nightly report',
      command: 'node',
      args: ['report.js', '--all'],
      shell: false,
      cwd: path.join(WORKSPACE, 'tools', 'report'),
      env: { MODE: 'full' },
      timeoutMs: 5000,
      maxAttempts: 7,
      runAt: Date.UTC(2024, 4, 1, 10, 30),
    });
    assert.equal(accepted({ command: 'make all', shell: true }).shell, true);
  });

  it('names the missing or unknown field', () => {
    assert.equal(rejected({}), 'missing required field "command"');
    assert.equal(rejected({ name: 'x' }), 'missing required field "command"');
    assert.match(rejected({ comand: 'echo' }), /unknown field "comand" \(allowed: id, name, command, /);
    assert.match(rejected({ comand: 'echo' }), /missing required field "command"/);
  });

  it('says which top-level field a rejection is about, for an editor to point at', () => {
    const field = (entry: unknown) => {
      const r = parse(entry);
      assert.ok(!r.ok, `expected ${JSON.stringify(entry)} to be rejected`);
      return r.field;
    };
    assert.equal(field({ comand: 'echo' }), 'comand');
    assert.equal(field({ command: 42 }), 'command');
    assert.equal(field({ command: 'x', env: { A: 1 } }), 'env');
    assert.equal(field({ command: 'x', cwd: '../..' }), 'cwd');
    assert.equal(field({ command: 'x', runAt: 'tomorrow-ish' }), 'runAt');
    assert.equal(field({ command: 'x', schedule: '61 * * * *' }), 'schedule');
    assert.equal(field({ command: 'x', id: 'a', dependsOn: ['a'] }), 'dependsOn');
    // A missing field is about the entry as a whole.
    assert.equal(field({ name: 'x' }), undefined);
  });

  it('names the field of the wrong type or value', () => {
    const cases: [unknown, RegExp][] = [
      [{ command: 42 }, /^command must be string$/],
      [{ command: '' }, /^command must NOT have fewer than 1 characters$/],
      [{ command: 'x', args: 'a b' }, /^args must be array$/],
      [{ command: 'x', args: ['ok', 3] }, /^args\.1 must be string$/],
      [{ command: 'x', shell: 'yes' }, /^shell must be boolean$/],
      [{ command: 'x', env: { PATH: 1 } }, /^env\.PATH must be string$/],
      [{ command: 'x', timeoutMs: 0 }, /^timeoutMs must be >= 1$/],
      [{ command: 'x', timeoutMs: 1.5 }, /^timeoutMs must be integer$/],
      [{ command: 'x', maxAttempts: 101 }, /^maxAttempts must be <= 100$/],
      [{ command: 'x', id: 'has space' }, /^id must match pattern/],
      [{ command: 'x', runAt: 'tomorrow' }, /^runAt must match format "date-time"$/],
      [{ command: 'x', runAt: '2024-02-30T00:00:00Z' }, /^runAt must match format "date-time"$/],
    ];
    for (const [entry, reason] of cases) assert.match(rejected(entry), reason, JSON.stringify(entry));
  });

  it('says every problem of an item at once', () => {
    const reason = rejected({ command: 42, timeoutMs: -1, extra: true });
    assert.match(reason, /unknown field "extra"/);
    assert.match(reason, /command must be string/);
    assert.match(reason, /timeoutMs must be >= 1/);
  });

  it('refuses args with shell: true and says where the arguments go', () => {
    assert.equal(rejected({ command: 'ls', shell: true, args: ['-l'] }), '"args" is not allowed with "shell": true; put the arguments in the command line');
    assert.deepEqual(accepted({ command: 'ls', shell: false, args: ['-l'] }).args, ['-l']);
  });

  it('rejects what is not an item object', () => {
    // One reason of its own: not the schema's complaints about args and shell.
    for (const [entry, got] of [[null, 'null'], [42, 'a number'], ['echo', 'a string'], [[], 'an array'], [[{ command: 'echo' }], 'an array'], [true, 'a boolean']] as const) {
      assert.equal(rejected(entry), `an item must be a JSON object with at least "command"; got ${got}`, JSON.stringify(entry));
    }
  });

  it('keeps the working directory inside the workspace folder', () => {
    assert.equal(accepted({ command: 'x', cwd: '.' }).cwd, WORKSPACE);
    assert.equal(accepted({ command: 'x', cwd: 'a/../b' }).cwd, path.join(WORKSPACE, 'b'));
    assert.equal(accepted({ command: 'x', cwd: path.join(WORKSPACE, 'abs') }).cwd, path.join(WORKSPACE, 'abs'));
    for (const cwd of ['..', '../other', 'a/../../other', '../ws-sibling', '/etc', path.dirname(WORKSPACE)]) {
      assert.equal(
        rejected({ command: 'x', cwd }),
        `cwd "${cwd}" resolves outside the workspace folder; use a path inside it`,
        cwd,
      );
    }
  });
});

describe('isInside', () => {
  it('is true for the root and what lies below it, false for parents and siblings', () => {
    assert.equal(isInside(WORKSPACE, WORKSPACE), true);
    assert.equal(isInside(WORKSPACE, path.join(WORKSPACE, 'a', 'b')), true);
    assert.equal(isInside(WORKSPACE, path.dirname(WORKSPACE)), false);
    // A sibling whose name starts with the root's name is not inside it.
    assert.equal(isInside(WORKSPACE, `${WORKSPACE}-other`), false);
    assert.equal(isInside(WORKSPACE, path.join(WORKSPACE, '..', 'elsewhere')), false);
  });
});

describe('deriveItemId', () => {
  it('is the file name, the index and a hash of both: readable, stable and unique', () => {
    const id = deriveItemId('.engine/queue/nightly.json', 3);
    assert.match(id, /^nightly:3:[0-9a-f]{10}$/);
    assert.equal(deriveItemId('.engine/queue/nightly.json', 3), id);
    assert.notEqual(deriveItemId('.engine/queue/nightly.json', 4), id);
    // Same slug, different files: the hash keeps them apart.
    const a = deriveItemId('.engine/queue/a b.json', 0);
    const b = deriveItemId('.engine/queue/a-b.json', 0);
    assert.equal(a.split(':')[0], 'a-b');
    assert.equal(b.split(':')[0], 'a-b');
    assert.notEqual(a, b);
    assert.notEqual(deriveItemId('one/jobs.json', 0), deriveItemId('two/jobs.json', 0));
  });

  it('drops the .json/.jsonl extension, replaces unsafe characters and caps the length', () => {
    assert.match(deriveItemId('q/lines.jsonl', 0), /^lines:0:/);
    assert.match(deriveItemId('q/UPPER.JSON', 0), /^UPPER:0:/);
    assert.match(deriveItemId('q/ünïcode & spaces!.json', 1), /^-n-code-spaces-:1:/);
    assert.match(deriveItemId('q/.json', 2), /^item:2:/);
    const long = deriveItemId(`q/${'x'.repeat(200)}.json`, 0);
    assert.equal(long.split(':')[0], 'x'.repeat(80));
  });

  it('makes ids the schema accepts for an explicit id', () => {
    for (const rel of ['q/a b.json', 'q/ünïcode.json', `q/${'y'.repeat(300)}.jsonl`, 'q/.json']) {
      const id = deriveItemId(rel, 99);
      assert.ok(parse({ id, command: 'x' }).ok, id);
    }
  });
});

describe('definitionHash', () => {
  const base = accepted({ id: 'a', command: 'node', args: ['x.js'], env: { A: '1', B: '2' }, runAt: '2024-05-01T00:00:00Z' });

  it('is the same for the same definition, whatever the order of env and the id', () => {
    assert.equal(definitionHash({ ...base }), definitionHash(base));
    assert.equal(definitionHash({ ...base, env: { B: '2', A: '1' } }), definitionHash(base));
    assert.equal(definitionHash({ ...base, id: 'renamed-id' }), definitionHash(base));
  });

  it('changes with anything that changes what the item does', () => {
    const changes: Partial<ItemDefinition>[] = [
      { name: 'other' },
      { command: 'nodejs' },
      { args: ['y.js'] },
      { args: ['x.js', ''] },
      { shell: true },
      { cwd: path.join(WORKSPACE, 'sub') },
      { env: { A: '1', B: '3' } },
      { env: { A: '1' } },
      { timeoutMs: base.timeoutMs + 1 },
      { maxAttempts: base.maxAttempts + 1 },
      { runAt: null },
    ];
    const seen = new Set([definitionHash(base)]);
    for (const change of changes) {
      const hash = definitionHash({ ...base, ...change });
      assert.ok(!seen.has(hash), `${JSON.stringify(change)} should change the hash`);
      seen.add(hash);
    }
  });
});

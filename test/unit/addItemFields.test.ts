// Add Item…'s optional steps read their answers into the queue file's fields (the engine judges
// the values: test/unit/controlCommands.test.ts), and the dashboard's item actions are a closed
// list the extension checks before it runs any command for the webview.
import assert from 'node:assert/strict';
import { conflictingFields, parseDependsOn, parsePriority, parseReady, parseSchedule, parseWatch } from '../../src/extension/commands/addItemFields';
import { ITEM_ACTION_APPLIES, itemActionApplies } from '../../src/shared/itemActions';
import { isWebviewToHost } from '../../src/shared/webviewProtocol';

describe('Add Item… fields', () => {
  it('reads a schedule with or without a time zone, and says how many fields a short one has', () => {
    assert.deepEqual(parseSchedule(' 0  2 * * * '), { value: '0 2 * * *' });
    assert.deepEqual(parseSchedule('0 2 * * * Europe/Berlin'), { value: { cron: '0 2 * * *', timezone: 'Europe/Berlin' } });
    assert.match((parseSchedule('0 2 * *') as { problem: string }).problem, /has 5 fields.*this has 4/);
  });

  it('reads ids, priorities, globs and readiness probes', () => {
    assert.deepEqual(parseDependsOn('a, b c,a'), { value: ['a', 'b', 'c'] });
    assert.ok('problem' in parseDependsOn(' , '));
    assert.deepEqual(parsePriority('−7'), { value: -7 });
    assert.deepEqual(parsePriority('+12'), { value: 12 });
    assert.ok('problem' in parsePriority('1.5'));
    assert.deepEqual(parseWatch('src/**/*.ts, package.json'), { value: { paths: ['src/**/*.ts', 'package.json'] } });
    assert.ok('problem' in parseWatch('../x/**'));
    assert.deepEqual(parseReady('port', '3000'), { value: { port: 3000 } });
    assert.deepEqual(parseReady('port', '127.0.0.1:5432'), { value: { port: 5432, host: '127.0.0.1' } });
    assert.ok('problem' in parseReady('port', 'http://x'));
    assert.deepEqual(parseReady('logPattern', 'listening on \\d+'), { value: { logPattern: 'listening on \\d+' } });
    assert.ok('problem' in parseReady('command', '  '));
  });

  it('refuses a schedule and a watch together', () => {
    assert.match(conflictingFields(['schedule', 'priority', 'watch']) ?? '', /cannot go together/);
    assert.equal(conflictingFields(['schedule', 'priority']), undefined);
  });
});

describe('item detail actions', () => {
  it('offers each action in the states the Items view offers it', () => {
    assert.deepEqual(['failed', 'launched', 'held', 'running', 'scheduled'].map((s) => ITEM_ACTION_APPLIES.retry(s as never)), [true, false, false, false, false]);
    assert.equal(ITEM_ACTION_APPLIES.hold('held'), false);
    assert.equal(ITEM_ACTION_APPLIES.release('held'), true);
    assert.equal(ITEM_ACTION_APPLIES.cancel('held'), true);
    assert.equal(ITEM_ACTION_APPLIES.cancel('launched'), false);
    // A service: Cancel stops it; Hold is not offered, as in the Items view.
    assert.equal(itemActionApplies('hold', 'ready', true), false);
    assert.equal(itemActionApplies('cancel', 'ready', true), true);
    assert.equal(itemActionApplies('hold', 'running', false), true);
  });

  it('takes only the four actions from the webview, and an item id', () => {
    assert.equal(isWebviewToHost({ type: 'itemAction', requestId: 1, itemId: 'a', action: 'hold' }), true);
    assert.equal(isWebviewToHost({ type: 'itemAction', requestId: 1, itemId: 'a', action: 'removeItem' }), false);
    assert.equal(isWebviewToHost({ type: 'itemAction', requestId: 1, itemId: 'a', action: 'workbench.action.terminal.sendSequence' }), false);
    assert.equal(isWebviewToHost({ type: 'itemAction', requestId: 1, itemId: '', action: 'retry' }), false);
    assert.equal(isWebviewToHost({ type: 'openSource', requestId: 2, itemId: 'a' }), true);
    assert.equal(isWebviewToHost({ type: 'openSource', requestId: 2 }), false);
  });
});

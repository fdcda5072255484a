// Queue Task…'s conversion of a tasks.json task into a queue item, checked against the engine's own
// validation (the item it gives must be one the engine accepts, with the meaning the task had).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { itemFromTask, watchInput, cronInputProblem, type TaskDescription } from '../../src/extension/tasks/taskItem';
import { parseItem } from '../../src/core/intake/items';

const FOLDER = '/ws/project';
const accept = (item: Record<string, unknown>) => {
  const r = parseItem(item, { workspaceFolder: FOLDER, relPath: '.engine/queue/x.json', index: 0, defaults: { timeoutMs: 1000, maxAttempts: 3 } });
  assert.ok(r.ok, r.ok ? '' : r.reason);
  return r.item;
};
const task = (over: Partial<TaskDescription>): TaskDescription => ({ label: 'Build', kind: 'shell', problemMatchers: [], ...over });

describe('Queue Task: a tasks.json task as a queue item', () => {
  it('a shell task with a command line stays one shell line; cwd relative, env and a known matcher kept', () => {
    const r = itemFromTask(task({ commandLine: 'npm run build && echo done', cwd: '${workspaceFolder}/web', env: { CI: '1' }, problemMatchers: ['$tsc', '$msCompile'] }), FOLDER, 'build-1', { kind: 'now' }, 'linux');
    assert.ok(r.ok);
    assert.deepEqual(r.item, { id: 'build-1', name: 'Build', command: 'npm run build && echo done', shell: true, cwd: 'web', env: { CI: '1' }, problemMatcher: '$tsc' });
    assert.equal(accept(r.item).cwd, '/ws/project/web');
  });

  it('a shell task with command and args quotes each argument so /bin/sh reads the same argv', () => {
    const args = ['it\'s', 'a b', '$HOME', '*.ts'];
    const r = itemFromTask(task({ command: 'printf', args: ['%s|', ...args] }), FOLDER, 'p', { kind: 'now' }, 'linux');
    assert.ok(r.ok);
    const out = execFileSync('/bin/sh', ['-c', r.item.command as string], { encoding: 'utf8' });
    assert.equal(out, `${args.join('|')}|`);
  });

  it('a process task keeps its argv; a schedule or a watch makes it a template', () => {
    const scheduled = itemFromTask(task({ kind: 'process', command: 'node', args: ['${workspaceFolder}/x.js'] }), FOLDER, 'n', { kind: 'schedule', cron: '0 2 * * *' }, 'linux');
    assert.ok(scheduled.ok);
    assert.deepEqual(scheduled.item, { id: 'n', name: 'Build', command: 'node', args: ['/ws/project/x.js'], schedule: '0 2 * * *' });
    assert.deepEqual(accept(scheduled.item).schedule?.cron, '0 2 * * *');
    const watched = itemFromTask(task({ kind: 'process', command: 'node', problemMatchers: ['$eslint-stylish', '$go'] }), FOLDER, 'w', { kind: 'watch', paths: ['src/**/*.ts'] }, 'linux');
    assert.ok(watched.ok);
    assert.deepEqual([watched.item.problemMatcher, accept(watched.item).watch], [['$eslint-stylish', '$go'], { paths: ['src/**/*.ts'], debounceMs: 300, onChange: 'restart' }]);
  });

  it('says why a task cannot be an item: a variable only VS Code resolves, a cwd outside the folder, no command', () => {
    const reason = (t: TaskDescription) => {
      const r = itemFromTask(t, FOLDER, 'x', { kind: 'now' }, 'linux');
      return r.ok ? 'ok' : r.reason;
    };
    assert.match(reason(task({ commandLine: 'echo ${file}' })), /uses \$\{file\}, which only VS Code can resolve/);
    assert.match(reason(task({ commandLine: 'ls', cwd: '..' })), /outside the workspace folder/);
    assert.match(reason(task({ kind: 'process' })), /has no command/);
    assert.match(cronInputProblem('0 2 * *') ?? '', /has 5 fields/);
    assert.deepEqual(watchInput(' src/**/*.ts , docs '), { paths: ['src/**/*.ts', 'docs'] });
    assert.ok('problem' in watchInput('../x'));
  });
});

// Open Attempt in Terminal types an item's command into the user's shell: what the shell reads back
// must be the argv the engine spawns. Checked by running the typed line through a real /bin/sh.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { commandLine, quoteCmd, quotePowerShell, quotePosix, shellKindOf } from '../../src/extension/shellQuote';

/** The argv a real /bin/sh gives a program for the typed line. */
function argvThroughSh(args: string[]): string[] {
  // Node reads its own options after `-e SCRIPT` until `--` (a first argument such as "- " would be
  // refused as a bad option), so the script's arguments come after `--`, which Node leaves out of argv.
  const line = commandLine({ command: process.execPath, args: ['-e', 'process.stdout.write(JSON.stringify(process.argv.slice(1)))', '--', ...args], shell: false }, 'posix');
  return JSON.parse(execFileSync('/bin/sh', ['-c', line], { encoding: 'utf8' })) as string[];
}

describe('shell quoting for Open Attempt in Terminal', () => {
  it('gives /bin/sh back exactly the argv, for hand-picked hard arguments', () => {
    const hard = ['', ' ', "it's", '"double"', "'", "''", 'a b  c', '$HOME', '`id`', '$(id)', '\\', 'back\\slash', '*', '~', '!x', '#not a comment', 'semi;colon', 'a\nb', '\t', 'ünï©ødé', '--flag=value with space', '-n', '- ', '-', '--', '&&', '|', '>out'];
    assert.deepEqual(argvThroughSh(hard), hard);
  });

  it('gives /bin/sh back exactly the argv, for any arguments (property)', function () {
    this.timeout(120_000);
    // argv cannot hold NUL; everything else, including control characters and astral code points.
    const arg = fc.string({ unit: 'grapheme-composite', maxLength: 12 }).filter((s) => !s.includes('\0'));
    fc.assert(
      fc.property(fc.array(arg, { maxLength: 5 }), (args) => {
        assert.deepEqual(argvThroughSh(args), args);
      }),
      { numRuns: 40 },
    );
  });

  it('leaves plain words unquoted so the typed line stays readable', () => {
    assert.equal(commandLine({ command: 'npm', args: ['run', 'build', '--', '--out=dist/x.js'], shell: false }, 'posix'), 'npm run build -- --out=dist/x.js');
    assert.equal(commandLine({ command: 'echo', args: ['hello world', "it's"], shell: false }, 'posix'), `echo 'hello world' 'it'\\''s'`);
    assert.equal(quotePosix(''), "''");
  });

  it('quotes a first word with "=" so the shell does not take it for an assignment', () => {
    assert.equal(commandLine({ command: 'A=1', args: [], shell: false }, 'posix'), "'A=1'");
  });

  it('types a shell command line as the item wrote it', () => {
    assert.equal(commandLine({ command: 'make -j4 && ./test.sh "a b"', args: [], shell: true }, 'posix'), 'make -j4 && ./test.sh "a b"');
  });

  it('quotes for PowerShell with single quotes doubled and the call operator before a quoted command', () => {
    assert.equal(quotePowerShell("it's"), "'it''s'");
    assert.equal(quotePowerShell('it\u2019s'), "'it\u2019\u2019s'");
    assert.equal(quotePowerShell('$env:PATH'), "'$env:PATH'");
    assert.equal(commandLine({ command: 'C:\\Program Files\\node.exe', args: ['a b', 'plain'], shell: false }, 'powershell'), "& 'C:\\Program Files\\node.exe' 'a b' plain");
    assert.equal(commandLine({ command: 'git', args: ['log'], shell: false }, 'powershell'), 'git log');
  });

  it('quotes for cmd.exe by the C runtime rules: inner quotes as \\" and backslashes before them doubled', () => {
    assert.equal(quoteCmd('a b'), '"a b"');
    assert.equal(quoteCmd('say "hi"'), '"say \\"hi\\""');
    assert.equal(quoteCmd('dir\\ with space\\'), '"dir\\ with space\\\\"');
  });

  it('tells the shell kind from the terminal\'s shell path', () => {
    assert.equal(shellKindOf('/bin/bash'), 'posix');
    assert.equal(shellKindOf('/usr/bin/zsh'), 'posix');
    assert.equal(shellKindOf('C:\\Program Files\\PowerShell\\7\\pwsh.exe', 'win32'), 'powershell');
    assert.equal(shellKindOf('C:\\WINDOWS\\System32\\WindowsPowerShell\\v1.0\\powershell.exe', 'win32'), 'powershell');
    assert.equal(shellKindOf('C:\\Windows\\System32\\cmd.exe', 'win32'), 'cmd');
    assert.equal(shellKindOf('', 'win32'), 'powershell');
  });
});

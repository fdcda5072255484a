// An item's command as a line to type into the user's shell (Open Attempt in Terminal): what
// the shell reads back must be exactly the argv the engine spawns. No `vscode`
// import: the unit tests run every argv through a real /bin/sh.

export type ShellKind = 'posix' | 'powershell' | 'cmd';

/** The kind of shell an integrated terminal runs, from its executable's path (VS Code's `vscode.env.shell`). */
export function shellKindOf(shellPath: string | undefined, platform: NodeJS.Platform = process.platform): ShellKind {
  const name = (shellPath ?? '').replace(/\\/g, '/').split('/').pop()!.toLowerCase().replace(/\.exe$/, '');
  if (name === 'pwsh' || name === 'powershell' || name.startsWith('pwsh-')) return 'powershell';
  if (name === 'cmd') return 'cmd';
  if (name === '' && platform === 'win32') return 'powershell';
  return 'posix';
}

/** Characters no POSIX shell treats specially anywhere in a word: left unquoted, so the typed line stays readable. */
const POSIX_PLAIN = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * One argument for a POSIX shell: inside single quotes nothing is special except the closing
 * quote, so each `'` becomes `'\''` (close, an escaped quote, reopen). The empty string is `''`.
 */
export function quotePosix(arg: string): string {
  if (POSIX_PLAIN.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * One argument for PowerShell: single-quoted strings are verbatim except the quote itself, doubled.
 * PowerShell also closes a single-quoted string at the typographic single quotes (U+2018–U+201B),
 * so those are doubled too.
 */
export function quotePowerShell(arg: string): string {
  if (/^[A-Za-z0-9_./:\\-]+$/.test(arg) && !/^-/.test(arg)) return arg;
  return `'${arg.replace(/['\u2018\u2019\u201a\u201b]/g, (q) => q + q)}'`;
}

/**
 * One argument for cmd.exe as most programs split their command line (the Microsoft C runtime's
 * rules): double quotes, backslashes before a quote doubled, an inner quote as `\"`. cmd.exe
 * expands `%VAR%` even inside quotes; nothing in cmd's syntax prevents that, so such an argument
 * is typed as it is and the user sees it before pressing Enter.
 */
export function quoteCmd(arg: string): string {
  if (/^[A-Za-z0-9_./:\\=-]+$/.test(arg)) return arg;
  const escaped = arg.replace(/(\\*)"/g, (_m, slashes: string) => `${slashes}${slashes}\\"`).replace(/(\\+)$/, '$1$1');
  return `"${escaped}"`;
}

export interface CommandDefinition {
  command: string;
  args: readonly string[];
  /** A shell command line (the item's `shell: true`): typed as the item wrote it. */
  shell: boolean;
}

/** The line that runs the item's command in a shell of this kind (without a newline: typed, not run). */
export function commandLine(def: CommandDefinition, kind: ShellKind): string {
  if (def.shell) return def.command;
  switch (kind) {
    case 'posix': {
      // A first word with `=` would be read as a variable assignment, not as the command.
      const command = def.command.includes('=') ? `'${def.command.replace(/'/g, `'\\''`)}'` : quotePosix(def.command);
      return [command, ...def.args.map(quotePosix)].join(' ');
    }
    case 'powershell': {
      // A quoted first word is a string to PowerShell; the call operator makes it a command.
      const command = quotePowerShell(def.command);
      const line = [command, ...def.args.map(quotePowerShell)].join(' ');
      return command.startsWith("'") ? `& ${line}` : line;
    }
    case 'cmd':
      return [def.command, ...def.args].map(quoteCmd).join(' ');
  }
}

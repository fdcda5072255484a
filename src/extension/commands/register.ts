// Registers the handlers of package.json's contributes.commands. Each feature's file builds its
// own handlers from the services it uses (engineCommands.ts, itemCommands.ts, openInTerminal.ts,
// logCommands.ts, queueCommands.ts, secretCommands.ts, serviceCommands.ts); the composition root joins them into one map keyed by
// CommandId, so a command without a handler does not compile. Each handler reports its own failure
// to the user here; none throws into VS Code's generic error toast.
import * as vscode from 'vscode';
import { Commands, type CommandId } from '../constants';
import { ControlNeedsTokenError, ControlUnavailableError } from '../remoteEngine';

export type CommandHandler = (...args: unknown[]) => unknown;

/** The handlers of some commands: a feature's file returns one for its own commands. */
export type CommandHandlers<Id extends CommandId> = Record<Id, CommandHandler>;

/** Where a failed command is written, besides the error message the user sees. */
export interface CommandLog {
  error(message: string): void;
}

export function registerCommands(handlers: CommandHandlers<CommandId>, log: CommandLog): vscode.Disposable[] {
  return Object.entries<CommandHandler>(handlers).map(([id, handler]) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        return await handler(...args);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (err instanceof ControlNeedsTokenError) {
          // The remote engine has no token, so it takes no control over HTTP: say how to give it one.
          void vscode.window.showWarningMessage(message, 'Set Remote Engine Token…').then((choice) => {
            if (choice) void vscode.commands.executeCommand(Commands.setRemoteToken);
          });
          return undefined;
        }
        if (err instanceof ControlUnavailableError) {
          // Not a failure: this window cannot control that engine, and says where to.
          void vscode.window.showInformationMessage(message);
          return undefined;
        }
        log.error(`${id}: ${message}`);
        void vscode.window.showErrorMessage(`Engine Monitor: ${message}`);
        return undefined;
      }
    }),
  );
}

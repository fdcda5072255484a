// The engine's own commands: Show Engine Status, Start, Stop, Restart, Poll Now, Refresh and Copy
// Endpoint URL. They act on the engine this window runs or watches, then ask the model for fresh
// numbers so the views follow at once.
import * as vscode from 'vscode';
import { Commands } from '../constants';
import { showDashboard } from '../dashboard/dashboard';
import type { EngineClient } from '../engineClient';
import type { EngineController } from '../engineController';
import type { EngineModel } from '../engineModel';
import type { LogsModel } from '../logsModel';
import type { CommandHandlers } from './register';

export interface EngineCommandServices {
  context: vscode.ExtensionContext;
  controller: Pick<EngineController, 'start' | 'stop' | 'restart' | 'control'>;
  client: EngineClient;
  model: Pick<EngineModel, 'refresh' | 'health'>;
  logs: Pick<LogsModel, 'refresh'>;
}

type EngineCommandId = (typeof Commands)['showStatus' | 'start' | 'stop' | 'restart' | 'pollNow' | 'refresh' | 'copyEndpointUrl'];

async function copyEndpointUrl(url: string | undefined): Promise<void> {
  if (!url) {
    void vscode.window.showInformationMessage('The engine is not running, so there is no endpoint yet.');
    return;
  }
  await vscode.env.clipboard.writeText(url);
  void vscode.window.setStatusBarMessage(`$(check) Copied ${url}`, 3000);
}

export function engineCommands({ context, controller, client, model, logs }: EngineCommandServices): CommandHandlers<EngineCommandId> {
  const afterControl = () => model.refresh(true);
  return {
    [Commands.showStatus]: () => showDashboard(context, client),
    [Commands.start]: async () => {
      await controller.start();
      afterControl();
    },
    [Commands.stop]: async () => {
      await controller.stop();
      afterControl();
    },
    [Commands.restart]: async () => {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'Restarting the engine…' },
        () => controller.restart(),
      );
    },
    [Commands.pollNow]: async () => {
      // A stopped engine (here or remote) neither polls nor launches: a poll that seems to do
      // nothing would leave the user guessing.
      if (model.health?.checks.engine === 'stopped') {
        void vscode.window.showInformationMessage('The engine is stopped: start it to poll.', 'Start Engine').then((choice) => {
          if (choice) void vscode.commands.executeCommand(Commands.start);
        });
        return;
      }
      await controller.control({ command: 'pollNow' });
      afterControl();
    },
    [Commands.refresh]: () => {
      client.reconnectNow();
      model.refresh(true);
      logs.refresh();
    },
    [Commands.copyEndpointUrl]: () => copyEndpointUrl(client.baseUrl),
  };
}

// Restart Service: a running service's processes are ended and it starts again at once; a stopped
// one (failed, or exited 0) starts again. Takes what the other item commands take (a tree node, a
// CodeLens's item id) or, from the palette, asks with a pick of the services.
import * as vscode from 'vscode';
import type { ItemDetail, StatusResponse } from '../../shared/api';
import { Commands } from '../constants';
import type { EngineClient } from '../engineClient';
import type { EngineController } from '../engineController';
import type { EngineModel } from '../engineModel';
import { targetOf } from './itemTarget';
import type { CommandHandlers } from './register';

export interface ServiceCommandServices {
  client: Pick<EngineClient, 'get'>;
  controller: Pick<EngineController, 'control'>;
  model: Pick<EngineModel, 'refresh'>;
}

export async function restartService(s: ServiceCommandServices, arg: unknown): Promise<ItemDetail | undefined> {
  const itemId = targetOf(arg)?.itemId ?? (await pickService(s));
  if (!itemId) return undefined;
  const result = (await s.controller.control({ command: 'restartItem', itemId })) as ItemDetail | undefined;
  void vscode.window.setStatusBarMessage(`$(debug-restart) Restarting ${result?.item?.name || itemId}`, 3000);
  s.model.refresh(true);
  return result;
}

async function pickService(s: ServiceCommandServices): Promise<string | undefined> {
  const services = (await s.client.get<StatusResponse>('/status')).services ?? [];
  if (services.length === 0) {
    void vscode.window.showInformationMessage('No item is a service (an item with "service": true), so there is nothing to restart.');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    services.map((svc) => ({ label: svc.name, description: `${svc.state}${svc.restarts ? ` · ${svc.restarts} restart${svc.restarts === 1 ? '' : 's'}` : ''}`, id: svc.id })),
    { placeHolder: 'Restart which service?' },
  );
  return pick?.id;
}

export function serviceCommands(s: ServiceCommandServices): CommandHandlers<typeof Commands.restartItem> {
  return { [Commands.restartItem]: (arg) => restartService(s, arg) };
}

// The Logs view's commands: Filter Logs…, Clear Filter, and Show Item Logs (the log entries of one
// item, or of every failure when no item is given).
import * as vscode from 'vscode';
import { Commands, Views } from '../constants';
import type { LogsModel } from '../logsModel';
import { pickLogFilter } from './logFilterPick';
import { targetOf } from './itemTarget';
import type { CommandHandlers } from './register';

export interface LogCommandServices {
  logs: Pick<LogsModel, 'filter' | 'setFilter'>;
}

type LogCommandId = (typeof Commands)['filterLogs' | 'clearLogFilter' | 'showItemLogs'];

export function logCommands({ logs }: LogCommandServices): CommandHandlers<LogCommandId> {
  return {
    [Commands.filterLogs]: async () => {
      const filter = await pickLogFilter(logs.filter);
      if (filter) await logs.setFilter(filter);
    },
    [Commands.clearLogFilter]: () => logs.setFilter({}),
    [Commands.showItemLogs]: async (arg) => {
      const itemId = targetOf(arg)?.itemId;
      await logs.setFilter(itemId ? { itemId } : { actions: ['item_failed'] });
      await vscode.commands.executeCommand(`${Views.logs}.focus`);
    },
  };
}

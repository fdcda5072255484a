// The queue folder's commands: Open Queue Folder, Create Queue Folder and Add Item…. They write
// files; the engine finds them on its next poll, which Add Item asks for at once when this window
// runs the engine.
import { Commands } from '../constants';
import type { EngineController } from '../engineController';
import { createQueueFolderCommand, openQueueFolderCommand, type QueueFolders } from '../queue';
import { addItemCommand } from './addItem';
import { queueTaskCommand } from '../tasks/queueTask';
import type { CommandHandlers } from './register';

export interface QueueCommandServices {
  queue: QueueFolders;
  controller: Pick<EngineController, 'isOwner' | 'control'>;
}

type QueueCommandId = (typeof Commands)['openQueueFolder' | 'createQueueFolder' | 'addItem' | 'queueTask'];

export function queueCommands({ queue, controller }: QueueCommandServices): CommandHandlers<QueueCommandId> {
  return {
    [Commands.openQueueFolder]: () => openQueueFolderCommand(queue),
    [Commands.createQueueFolder]: () => createQueueFolderCommand(queue),
    [Commands.addItem]: () =>
      addItemCommand({
        queue,
        // Only the engine this window runs answers the check; another window's or a remote one judges the file when it reads it.
        checkItem: () => (controller.isOwner ? (command) => controller.control(command) : undefined),
        pollNow: () => (controller.isOwner ? controller.control({ command: 'pollNow' }) : Promise.resolve()),
      }),
    [Commands.queueTask]: () => queueTaskCommand(queue, () => (controller.isOwner ? controller.control({ command: 'pollNow' }) : Promise.resolve())),
  };
}

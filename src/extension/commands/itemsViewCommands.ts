// The Items view's own commands: "Show more…" at the end of a group that lists only its first items.
import { Commands } from '../constants';
import type { EngineModel, ItemGroup } from '../engineModel';
import { ITEM_GROUPS } from '../engineModel';
import type { CommandHandlers } from './register';

export function itemsViewCommands({ model }: { model: Pick<EngineModel, 'showMore'> }): CommandHandlers<typeof Commands.showMoreItems> {
  return {
    [Commands.showMoreItems]: (group: unknown) => {
      // Only ever run from the view's own row, which passes its group.
      if (typeof group !== 'string' || !(ITEM_GROUPS as readonly string[]).includes(group)) {
        throw new Error(`Show more needs one of the Items view's groups (${ITEM_GROUPS.join(', ')}); got ${JSON.stringify(group)}. Use the "Show more…" row at the end of a group.`);
      }
      model.showMore(group as ItemGroup);
    },
  };
}

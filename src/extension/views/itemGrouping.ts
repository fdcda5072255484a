// How the Items view folds the occurrences of a template (a schedule's `nightly@2026-11-24T02:00Z`,
// a watched item's `lint@2026-11-24T10:15:02.120Z`) into one row per template, so that a template
// firing every minute does not fill a group with rows that read the same. Pure, without vscode.
import type { ItemSummary } from '../../shared/api';

/** An occurrence's id: the template's id, `@`, the time it fired in UTC (to the minute or the millisecond). */
const OCCURRENCE_ID = /^(.+)@(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z)$/;

/** The template id and firing time of an occurrence's id; undefined for any other item. */
export function occurrenceOf(itemId: string): { templateId: string; at: string } | undefined {
  const m = OCCURRENCE_ID.exec(itemId);
  return m ? { templateId: m[1], at: m[2] } : undefined;
}

export type ItemEntry = { kind: 'item'; item: ItemSummary } | { kind: 'template'; templateId: string; items: ItemSummary[] };

/**
 * A group's items, with the occurrences of each template that has more than one in the list
 * folded into one entry, placed where its first occurrence was; within it, the list's order
 * (newest first where the list is). A template with a single occurrence keeps it as a plain row.
 */
export function foldOccurrences(items: readonly ItemSummary[]): ItemEntry[] {
  const byTemplate = new Map<string, ItemSummary[]>();
  for (const item of items) {
    const o = occurrenceOf(item.id);
    if (!o) continue;
    const list = byTemplate.get(o.templateId);
    if (list) list.push(item);
    else byTemplate.set(o.templateId, [item]);
  }
  const entries: ItemEntry[] = [];
  const placed = new Set<string>();
  for (const item of items) {
    const o = occurrenceOf(item.id);
    const list = o && byTemplate.get(o.templateId);
    if (!o || !list || list.length < 2) {
      entries.push({ kind: 'item', item });
    } else if (!placed.has(o.templateId)) {
      placed.add(o.templateId);
      entries.push({ kind: 'template', templateId: o.templateId, items: list });
    }
  }
  return entries;
}

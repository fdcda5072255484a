// Queue items: validation against the shipped JSON Schema (the same file the editor uses through
// jsonValidation, so the editor and the engine never disagree), id derivation and normalisation.
import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { createHash } from 'node:crypto';
import path from 'node:path';
import itemFileSchema from '../../schemas/item.schema.json';
import { isInside } from './workingFolder';

// Kept here too for the callers that judge queue files (src/core/queueSource.ts).
export { isInside };

/** An item exactly as a queue file may write it. */
export interface ItemInput {
  id?: string;
  name?: string;
  command: string;
  args?: string[];
  shell?: boolean;
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  maxAttempts?: number;
  runAt?: string;
}

/** An item with every default resolved: what the engine stores and launches. */
export interface ItemDefinition {
  id: string;
  name: string;
  command: string;
  args: string[];
  shell: boolean;
  /** Absolute working directory, inside the workspace folder. */
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxAttempts: number;
  /** Epoch milliseconds, or null to launch as soon as possible. */
  runAt: number | null;
}

export interface ItemDefaults {
  timeoutMs: number;
  maxAttempts: number;
}

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv, ['date-time']);
ajv.addSchema(itemFileSchema, 'item-file');
const validateItem = ajv.getSchema('item-file#/definitions/item')!;

export type ItemResult = { ok: true; item: ItemDefinition } | { ok: false; reason: string };

/**
 * Validates one entry and resolves its defaults. `relPath` is the queue file's path relative to
 * the workspace folder (with `/` separators), `index` the entry's position in the file: together
 * they make the derived id, so the same file always yields the same ids.
 */
export function parseItem(
  entry: unknown,
  ctx: { workspaceFolder: string; relPath: string; index: number; defaults: ItemDefaults },
): ItemResult {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    // The schema would answer with every branch it tried (args, shell…), none of them the point.
    const got = entry === null ? 'null' : Array.isArray(entry) ? 'an array' : `a ${typeof entry}`;
    return { ok: false, reason: `an item must be a JSON object with at least "command"; got ${got}` };
  }
  if (!validateItem(entry)) {
    return { ok: false, reason: describeSchemaErrors(validateItem.errors ?? []) };
  }
  const input = entry as ItemInput;
  const id = input.id ?? deriveItemId(ctx.relPath, ctx.index);
  const cwd = path.resolve(ctx.workspaceFolder, input.cwd ?? '.');
  if (!isInside(ctx.workspaceFolder, cwd)) {
    return { ok: false, reason: `cwd "${input.cwd}" resolves outside the workspace folder; use a path inside it` };
  }
  let runAt: number | null = null;
  if (input.runAt !== undefined) {
    runAt = Date.parse(input.runAt);
    if (Number.isNaN(runAt)) return { ok: false, reason: `runAt "${input.runAt}" is not a valid ISO 8601 date-time` };
  }
  return {
    ok: true,
    item: {
      id,
      name: input.name ?? id,
      command: input.command,
      args: input.args ?? [],
      shell: input.shell ?? false,
      cwd,
      env: input.env ?? {},
      timeoutMs: input.timeoutMs ?? ctx.defaults.timeoutMs,
      maxAttempts: input.maxAttempts ?? ctx.defaults.maxAttempts,
      runAt,
    },
  };
}

/**
 * Derived ids stay readable (the file's base name and the index) and unique (a hash of the
 * relative path, so `a b.json` and `a_b.json` do not collide).
 */
export function deriveItemId(relPath: string, index: number): string {
  const base = path.posix.basename(relPath).replace(/\.(jsonl?|JSONL?)$/, '');
  const slug = base.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 80) || 'item';
  const hash = createHash('sha256').update(`${relPath}\n${index}`).digest('hex').slice(0, 10);
  return `${slug}:${index}:${hash}`;
}

/** A stable fingerprint of what the item would do, to tell a re-read from a conflicting redefinition. */
export function definitionHash(item: ItemDefinition): string {
  const canonical = JSON.stringify([
    item.name,
    item.command,
    item.args,
    item.shell,
    item.cwd,
    Object.entries(item.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    item.timeoutMs,
    item.maxAttempts,
    item.runAt,
  ]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 32);
}

function describeSchemaErrors(errors: ErrorObject[]): string {
  // Ajv reports every branch of if/then and oneOf; keep the messages a person can act on.
  const messages = new Set<string>();
  for (const e of errors) {
    const where = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'item';
    switch (e.keyword) {
      case 'if':
        continue;
      case 'not':
        messages.add('"args" is not allowed with "shell": true; put the arguments in the command line');
        break;
      case 'additionalProperties':
        messages.add(
          `unknown field "${(e.params as { additionalProperty: string }).additionalProperty}" (allowed: id, name, command, args, shell, cwd, env, timeoutMs, maxAttempts, runAt)`,
        );
        break;
      case 'required':
        messages.add(`missing required field "${(e.params as { missingProperty: string }).missingProperty}"`);
        break;
      case 'type':
        messages.add(e.instancePath ? `${where} must be ${(e.params as { type: string }).type}` : 'an item must be a JSON object');
        break;
      default:
        messages.add(`${where} ${e.message ?? 'is invalid'}`);
    }
  }
  return [...messages].join('; ');
}

// The queue item's validator, compiled by Ajv from the shipped JSON Schema. Compiling it costs the
// engine host more CPU at every start than anything else it loads (a third of a second on an idle
// machine, seconds on a loaded one), so the bundles carry it compiled at build time: build.mjs puts
// itemValidatorModule()'s code in place of itemValidator.ts. Run from source (tests), the same
// compileItemSchema compiles it at load, so the two cannot differ (itemValidator.test.ts compares them).
import Ajv, { type Options, type ValidateFunction } from 'ajv';
import standaloneCode from 'ajv/dist/standalone';
import addFormats from 'ajv-formats';
import itemFileSchema from '../../../schemas/item.schema.json';

export function compileItemSchema(code?: Options['code']): { ajv: Ajv; validate: ValidateFunction } {
  const ajv = new Ajv({ allErrors: true, strict: false, ...(code ? { code } : {}) });
  addFormats(ajv, ['date-time']);
  ajv.addSchema(itemFileSchema, 'item-file');
  return { ajv, validate: ajv.getSchema('item-file#/definitions/item')! };
}

/**
 * The source of a module exporting `validateItem`, the validator compiled ahead (Ajv's standalone
 * code: an ES module that `require`s two of Ajv's runtime helpers, which a bundler resolves).
 */
export function itemValidatorModule(): string {
  const { ajv, validate } = compileItemSchema({ source: true, esm: true });
  const code = standaloneCode(ajv, validate);
  const exported = 'export const validate = ';
  if (!code.includes(exported)) throw new Error('Ajv\'s standalone code no longer starts with `export const validate =`; update itemValidatorModule');
  return code.replace(exported, 'export const validateItem = ');
}

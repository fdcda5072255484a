// The queue item's validator (itemSchema.ts). Run from source (tests, tsx), it is compiled here
// when first loaded; in the bundles build.mjs replaces this file with the same validator compiled
// at build time (Ajv's standalone code), so the engine host starts without compiling a schema.
import type { ValidateFunction } from 'ajv';
import { compileItemSchema } from './itemSchema';

export const validateItem: ValidateFunction = compileItemSchema().validate;

// Lint for the TypeScript sources: typescript-eslint's type-aware rules (they read the types from
// tsconfig.json, so a dropped promise or a misused async callback is caught before it runs) and a
// check that imports point the one way the architecture allows. Formatting is not linted.
import tseslint from 'typescript-eslint';

// Relative imports that climb out of a folder into one of the named sibling folders, at any depth
// (`../server/x` from src/core, `../../server/x` from src/core/store, `../../src/core/x` from
// media/src). Matching the import text needs no resolver, so the check cannot silently pass on an
// import it failed to resolve.
function intoFolders(folders, why) {
  return { regex: `^(\\.\\./)+(src/)?(${folders.join('|')})(/|$)`, message: why };
}
const noVscode = { name: 'vscode', message: 'Only src/extension runs inside VS Code; this code also runs headless.' };
const noExpress = { name: 'express', message: 'Only src/server speaks HTTP; the engine stays usable without it.' };

// One entry per folder: a file gets the options of the last entry that matches it, so each
// folder's list is complete on its own.
const importArrows = [
  {
    files: ['src/core/**/*.ts'],
    paths: [noVscode, noExpress],
    patterns: [intoFolders(['server', 'host', 'extension'], 'The engine core is imported by server and host, never the other way: move the shared part into src/core or src/shared.')],
  },
  {
    files: ['src/server/**/*.ts'],
    paths: [noVscode],
    patterns: [intoFolders(['host', 'extension'], 'The HTTP server sees only src/core and src/shared: the host composes it with the engine.')],
  },
  {
    files: ['src/host/**/*.ts'],
    paths: [noVscode],
    patterns: [intoFolders(['extension'], 'The headless host must run without VS Code: it sees src/core, src/server and src/shared.')],
  },
  {
    files: ['src/extension/**/*.ts'],
    paths: [noExpress],
    patterns: [intoFolders(['core', 'server', 'host'], 'The VS Code UI talks to the engine over HTTP and the host protocol: it imports only src/shared.')],
  },
  {
    files: ['src/shared/**/*.ts'],
    paths: [noVscode, noExpress],
    patterns: [intoFolders(['core', 'server', 'host', 'extension'], 'src/shared is what both sides use; it depends on nothing else in src.')],
  },
  {
    files: ['media/src/**/*.ts'],
    paths: [noVscode, noExpress],
    patterns: [intoFolders(['core', 'server', 'host', 'extension'], 'The webview runs in a browser and talks to the extension by messages: it imports only src/shared.')],
  },
].map(({ files, paths, patterns }) => ({ files, rules: { 'no-restricted-imports': ['error', { paths, patterns }] } }));

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '.vscode-test/**', '**/*.mjs', '**/*.js'] },
  {
    files: ['src/**/*.ts', 'media/src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // An async function without await is how a Promise-returning interface (a VS Code
      // serializer, a poll callback) is met; the rules that catch real promise bugs stay on.
      '@typescript-eslint/require-await': 'off',
      // The compiler's noUnusedParameters already takes `_` for "required by the signature"
      // (Express tells an error handler by its four parameters); a rest sibling drops a field.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // `a() || b()` as a statement is a deliberate "try a, else b".
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true }],
      // A variable that callbacks read before it is assigned cannot be const (they would throw).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Tests and benchmarks read HTTP bodies and child-process output as JSON: `any` is the honest
    // type there and the assertions check the shape; their messages show whatever value came.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    // The bundled extension-host suite lists its files with require() (a bundle defeats globbing),
    // and some tests load a module only once the test has set the stage for it.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  ...importArrows,
  {
    // A room that grows past 500 lines is split, not stretched: the limit counts every line,
    // comments and blank ones included, since they are what a reader scrolls through too. Tests
    // and their harness are held to it as well: a 1,000-line test file is as hard to find one's
    // way in as a 1,000-line module. bench/ is a tool run by hand, not a room, and stays outside.
    files: ['src/**/*.ts', 'media/src/**/*.ts', 'test/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 500, skipBlankLines: false, skipComments: false }] },
  },
  {
    // The kernel's engine only creates, starts, stops and delegates: a feature that lands in it
    // instead of in its own folder under src/core/features/ shows up here first.
    files: ['src/core/kernel/engine.ts'],
    rules: { 'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }] },
  },
);

// The README's "Where things live" table is the map a new maintainer reads first, so it is checked
// against the real folders: every source folder that holds files has a row, and every folder or
// file a row names exists. Nothing here lists the folders itself: it walks the tree as it is, so a
// folder that is added, moved or split fails this test until the table says where it went.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const REPO_ROOT = path.resolve(__dirname, '../..');
const HEADING = 'Where things live';

interface Row {
  /** The folder as the table writes it, without its trailing slash; `*` stands for any one folder. */
  folder: string;
  /** Every `backticked` name in the row's other cells. */
  names: string[];
}

/** The rows of the first table after the heading "Where things live". */
export function tableRows(readme: string): Row[] {
  const lines = readme.split(/\r?\n/);
  const start = lines.findIndex((l) => /^#+\s/.test(l) && l.includes(HEADING));
  if (start < 0) throw new Error(`README.md has no "${HEADING}" heading: the folder map this test checks is gone`);
  const rows: Row[] = [];
  let i = start + 1;
  while (i < lines.length && !lines[i].startsWith('|') && !/^#/.test(lines[i])) i++;
  for (i += 2; i < lines.length && lines[i].startsWith('|'); i++) {
    const [first, ...rest] = lines[i].split('|').slice(1, -1);
    const folder = /`([^`]+)`/.exec(first)?.[1];
    if (!folder) throw new Error(`README.md "${HEADING}": a row does not start with a \`folder/\`: ${lines[i]}`);
    const names = [...rest.join('|').matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    rows.push({ folder: folder.replace(/\/+$/, ''), names });
  }
  if (rows.length === 0) throw new Error(`README.md "${HEADING}" has no table under it`);
  return rows;
}

/** Folders under `dir` (itself included) that hold at least one file, relative to `root`. */
function foldersWithFiles(root: string, dir: string): string[] {
  const entries = readdirSync(path.join(root, dir), { withFileTypes: true });
  const own = entries.some((e) => e.isFile()) ? [dir] : [];
  return own.concat(...entries.filter((e) => e.isDirectory()).map((e) => foldersWithFiles(root, `${dir}/${e.name}`)));
}

function covers(rowFolder: string, folder: string): boolean {
  const want = rowFolder.split('/');
  const have = folder.split('/');
  return want.length === have.length && want.every((seg, i) => seg === '*' || seg === have[i]);
}

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
/** A name that is a file: `engine.ts`, `store/schema.ts`; not `/events`, `StoreBackend` or `engine-monitor status`. */
const FILE_NAME = /^[\w.+-]+(\/[\w.+-]+)*\.(ts|tsx|js|mjs|cjs|json|css|html|md|sh)$/;
/** A name that is a path from the repository root: `src/shared`, `media/src/main.ts`. */
const ROOTED = /^(src|media)(\/|$)/;

/**
 * What is wrong between the table in `root`/README.md and the folders under `root`, each as a
 * sentence saying which folder and what to do. The folders checked are every folder under src/
 * and under any other root the table has a row for (media/src), that holds a file.
 */
export function layoutProblems(root: string): string[] {
  const rows = tableRows(readFileSync(path.join(root, 'README.md'), 'utf8'));
  const problems: string[] = [];
  const roots = new Set(['src', ...rows.map((r) => r.folder).filter((f) => !f.startsWith('src/') && f !== 'src' && isDir(path.join(root, f)))]);
  for (const top of roots) {
    if (!isDir(path.join(root, top))) continue;
    for (const folder of foldersWithFiles(root, top)) {
      if (rows.some((r) => covers(r.folder, folder))) continue;
      problems.push(
        `${folder}/ holds files but has no row in README.md's "${HEADING}" table: ` +
          `add a row "| \`${folder}/\` | what it holds | what it may import |" (and its arrow in eslint.config.mjs if it has one)`,
      );
    }
  }
  for (const row of rows) {
    const base = row.folder.split('/*')[0];
    const matches = !isDir(path.join(root, base))
      ? []
      : row.folder.includes('*')
        ? foldersWithFiles(root, base).filter((f) => covers(row.folder, f))
        : [row.folder];
    if (matches.length === 0) {
      problems.push(
        `README.md's "${HEADING}" has a row for ${row.folder}/, which is not a folder here: ` +
          `move the row to where that code lives now, or delete it`,
      );
      continue;
    }
    for (const name of row.names) {
      if (ROOTED.test(name)) {
        if (!existsSync(path.join(root, name))) {
          problems.push(`README.md's "${HEADING}" row for ${row.folder}/ names ${name}, which does not exist: fix the path or drop it`);
        }
      } else if (FILE_NAME.test(name) && !matches.some((m) => existsSync(path.join(root, m, name)))) {
        problems.push(
          `README.md's "${HEADING}" row for ${row.folder}/ names \`${name}\`, but ${row.folder}/${name} does not exist: ` +
            `name it in the row of the folder it moved to, or drop it if it is gone`,
        );
      }
    }
  }
  return problems;
}

describe('README "Where things live" against the folders', () => {
  it('every source folder has a row, and every folder and file a row names exists', () => {
    const problems = layoutProblems(REPO_ROOT);
    if (problems.length > 0) assert.fail(`README.md and the folders disagree:\n${problems.join('\n')}`);
  });

  describe('the check itself, on a made-up tree', () => {
    let root: string;
    const write = (rel: string, text = '') => {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), text);
    };
    const readme = (...rows: string[]) =>
      write('README.md', ['# X', '', `### ${HEADING}`, '', '| folder | holds | may import |', '|---|---|---|', ...rows, '', 'After.'].join('\n'));

    beforeEach(() => (root = mkdtempSync(path.join(tmpdir(), 'layout-'))));
    afterEach(() => rmSync(root, { recursive: true, force: true }));

    it('passes a table that matches the tree', () => {
      write('src/core/engine.ts');
      write('src/core/features/control/handlers.ts');
      write('src/core/features/schedules/schedules.ts');
      write('src/shared/api.ts');
      write('media/src/main.ts');
      readme(
        '| `src/core/` | the engine: `engine.ts`, `StoreBackend`, `/events` | `src/shared`, Node |',
        '| `src/core/features/*/` | one feature each: `handlers.ts` | as core |',
        '| `src/shared/` | types | nothing |',
        '| `media/src/` | the webview: `main.ts` | `src/shared` |',
      );
      assert.deepEqual(layoutProblems(root), []);
    });

    it('names a folder without a row, also under a root other than src/, and a folder with only folders needs none', () => {
      write('src/core/engine.ts');
      write('src/core/kernel/dispatch.ts');
      write('src/core/features/control/handlers.ts');
      write('media/src/main.ts');
      write('media/src/parts/chart.ts');
      readme('| `src/core/` | the engine | shared |', '| `src/core/features/*/` | features | core |', '| `media/src/` | webview | shared |');
      const problems = layoutProblems(root);
      assert.equal(problems.length, 2, problems.join('\n'));
      assert.match(problems[0], /^src\/core\/kernel\/ holds files but has no row .* add a row "\| `src\/core\/kernel\/` \|/);
      assert.match(problems[1], /^media\/src\/parts\/ holds files but has no row/);
    });

    it('names a row whose folder is gone, and a file or path a row names that does not exist', () => {
      write('src/core/kernel/engine.ts');
      readme(
        '| `src/core/kernel/` | `engine.ts`, `transitions.ts` | `src/shared` |',
        '| `src/core/store/` | the store | core |',
        '| `src/core/features/*/` | features | core |',
      );
      assert.deepEqual(layoutProblems(root), [
        `README.md's "${HEADING}" row for src/core/kernel/ names \`transitions.ts\`, but src/core/kernel/transitions.ts does not exist: name it in the row of the folder it moved to, or drop it if it is gone`,
        `README.md's "${HEADING}" row for src/core/kernel/ names src/shared, which does not exist: fix the path or drop it`,
        `README.md's "${HEADING}" has a row for src/core/store/, which is not a folder here: move the row to where that code lives now, or delete it`,
        `README.md's "${HEADING}" has a row for src/core/features/*/, which is not a folder here: move the row to where that code lives now, or delete it`,
      ]);
    });

    it('says so when the heading or its table is missing', () => {
      write('src/a.ts');
      write('README.md', '# X\n\nNo map here.\n');
      assert.throws(() => layoutProblems(root), /no "Where things live" heading/);
      write('README.md', `# X\n\n### ${HEADING}\n\nSoon.\n`);
      assert.throws(() => layoutProblems(root), /has no table under it/);
    });
  });
});

// Child: the floor for the engine host's memory, measured outside the engine.
// A bare Node.js process, with the engine host's Node options, that does only what any process
// serving this database through sql.js must: load sql.js's WebAssembly and open the same snapshot
// in memory with the store's own loader (sql.js keeps the database as a file in its in-memory file
// system; the loader reads it without a second copy), read every table once so its pages have been
// through the page cache, and sit. Its RSS is what the engine's own
// work (the API, the launch helpers' client, the word indexes, the event log) adds to.
import path from 'node:path';
import { openSnapshot } from '../../src/core/store/snapshotFiles';
import { loadSqlJs } from '../../src/core/store/sqlJs';
import { memoryBreakdown, watchWasmMemory } from '../lib';

const { snapshot } = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as { snapshot: string };

async function main(): Promise<void> {
  watchWasmMemory();
  const SQL = await loadSqlJs();
  const db = openSnapshot(SQL, path.dirname(snapshot), []);
  if (!db) throw new Error(`${snapshot} did not open`);
  const counts: Record<string, number> = {};
  for (const table of ['items', 'attempts', 'logs']) counts[table] = Number(db.exec(`SELECT COUNT(*) FROM ${table}`)[0].values[0][0]);
  // What a collection leaves: the snapshot's read buffer and the start-up garbage gone, as they
  // would be by the engine's first minutes.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const breakdown = memoryBreakdown();
  process.stdout.write(`${JSON.stringify({ counts, breakdown, maxRss: process.resourceUsage().maxRSS * 1024 })}\n`);
  db.close();
}

void main();

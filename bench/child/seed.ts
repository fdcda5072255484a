// Child: seeds a storage folder (see ../seed.ts) and prints the result as one JSON line.
import { seedStore } from '../seed';

const config = JSON.parse(process.env.BENCH_CONFIG ?? '{}');
seedStore(config).then(
  (r) => {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    process.exit(0);
  },
  (err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  },
);

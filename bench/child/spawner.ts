// Child: the bare Node.js spawner, the floor for launches. It only spawns the command N
// times, `concurrency` at a time, each detached (its own process group and session, as the
// engine's attempts) with stdio ignored, and prints the wall time from the first spawn to the last
// exit. What Node's child_process.spawn() costs, with none of the engine's work around it.
import { spawn } from 'node:child_process';

const { items, command, args, concurrency } = JSON.parse(process.env.BENCH_CONFIG ?? '{}') as { items: number; command: string; args: string[]; concurrency: number };
let started = 0;
let finished = 0;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const next = (): void => {
  if (started === items) return;
  started++;
  const child = spawn(command, args, { stdio: 'ignore', detached: true });
  child.on('exit', () => {
    if (++finished === items) {
      const cpu = process.cpuUsage(cpu0);
      process.stdout.write(`${JSON.stringify({ wallMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
    } else next();
  });
};
for (let i = 0; i < concurrency; i++) next();

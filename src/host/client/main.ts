// `engine-monitor <command>`: the command-line client's entry, called by cli.ts for every command
// but `serve`. Returns the exit code (options.ts); never throws for a usage error, an engine's
// refusal or an unreachable engine: each is one line on stderr that says what to do.
import { escapeControls } from '../../shared/format';
import { runCommand, write, type Io } from './commands';
import { EngineError, findEndpoint, UnreachableError } from './connection';
import { CLIENT_USAGE, ClientUsageError, EXIT_CLIENT_USAGE, EXIT_ENGINE_ERROR, EXIT_OK, EXIT_UNREACHABLE, parseClientArgs, SHORT_USAGE } from './options';
import { detectTerminal } from './render';

export { CLIENT_USAGE, isClientCommand } from './options';

export async function runClient(argv: string[]): Promise<number> {
  const err = (text: string) => void process.stderr.write(text);
  let parsed;
  try {
    parsed = parseClientArgs(argv);
    if (parsed.help) {
      await write(process.stdout, CLIENT_USAGE);
      return EXIT_OK;
    }
  } catch (e) {
    if (!(e instanceof ClientUsageError)) throw e;
    err(`engine-monitor: ${e.message}\n${SHORT_USAGE}`);
    return EXIT_CLIENT_USAGE;
  }

  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // A reader that goes away (`engine-monitor logs --follow | head`) ends the client quietly.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(EXIT_OK);
  });
  const io: Io = { term: detectTerminal(), out: (t) => write(process.stdout, t), err, stop: stop.signal };
  try {
    const endpoint = findEndpoint(parsed);
    return await runCommand(parsed, endpoint, io);
  } catch (e) {
    if (e instanceof ClientUsageError) {
      err(`engine-monitor: ${e.message}\n${SHORT_USAGE}`);
      return EXIT_CLIENT_USAGE;
    }
    if (e instanceof EngineError) {
      err(`engine-monitor: ${escapeControls(e.message)}\n`);
      return EXIT_ENGINE_ERROR;
    }
    if (e instanceof UnreachableError) {
      err(`engine-monitor: ${escapeControls(e.message)}\n`);
      return EXIT_UNREACHABLE;
    }
    throw e;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

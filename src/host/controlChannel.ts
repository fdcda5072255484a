// Control requests (start, stop, poll, retry, cancel, hold, release, trust) as the engine host
// runs them, whichever way they arrive: the control connection windows attach with
// (controlServer.ts), or the IPC channel of a parent that forked the host (tests and tools). They
// travel there rather than over HTTP, which takes control only when a token is configured.
import type { ControlCommand, FromHostMessage, ToHostMessage } from '../shared/hostProtocol';
import type { RunningHost } from './engineHost';

export type ControlResult = { ok: true; result?: unknown } | { ok: false; error: string };

/** Runs one control command; a refusal (no such item, not pending…) is an answer, not a throw. */
export async function runControl(host: RunningHost, command: ControlCommand): Promise<ControlResult> {
  try {
    const engine = host.engine;
    switch (command.command) {
      case 'start':
        engine.startLaunching();
        return { ok: true };
      case 'stop':
        engine.stopLaunching();
        return { ok: true };
      case 'pollNow':
        await engine.pollNow();
        return { ok: true };
      case 'retryItem':
        engine.retryItem(command.itemId);
        return { ok: true, result: engine.itemDetail(command.itemId) };
      // Each answers with the item as GET /items/{id} reports it after the change.
      case 'cancelItem':
        engine.cancelItem(command.itemId);
        return { ok: true, result: engine.itemDetail(command.itemId) };
      case 'holdItem':
        engine.holdItem(command.itemId);
        return { ok: true, result: engine.itemDetail(command.itemId) };
      case 'releaseItem':
        engine.releaseItem(command.itemId);
        return { ok: true, result: engine.itemDetail(command.itemId) };
      case 'retryAllFailed':
        return { ok: true, result: engine.retryAllFailed() };
      case 'grantTrust':
        engine.grantTrust();
        return { ok: true };
      default:
        return { ok: false, error: `unknown control command ${(command as { command: string }).command}` };
    }
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

/** Serves control requests from a parent process that forked the host with an IPC channel. */
export function serveControlChannel(host: RunningHost, send: (m: FromHostMessage) => void): void {
  process.on('message', (raw: unknown) => {
    const message = raw as ToHostMessage;
    if (!message || message.type !== 'control') return;
    const { type: _type, requestId, ...command } = message;
    void runControl(host, command).then((result) => send({ type: 'controlResult', requestId, ...result }));
  });
}

// Control requests from the parent process that forked this engine host (the VS Code extension),
// over the IPC channel: start, stop, poll, retry, cancel, hold, release, trust. They travel here
// rather than over HTTP, which takes control only when a token is configured: the extension
// controls its own engine whether or not the user set one.
import type { FromHostMessage, ToHostMessage } from '../shared/hostProtocol';
import type { RunningHost } from './engineHost';
import { runChannelCommand } from '../core/features/control/commands';

/** Serves control requests from a parent process (the VS Code extension) over the IPC channel. */
export function serveControlChannel(host: RunningHost, send: (m: FromHostMessage) => void): void {
  process.on('message', (raw: unknown) => {
    const message = raw as ToHostMessage;
    if (!message || message.type !== 'control') return;
    const reply = (result: { ok: true; result?: unknown } | { ok: false; error: string }) =>
      send({ type: 'controlResult', requestId: message.requestId, ...result });
    void (async () => {
      try {
        // One table for the channel and the HTTP routes (features/control/commands.ts).
        const result = await runChannelCommand(host.engine, message);
        return reply(result === undefined ? { ok: true } : { ok: true, result });
      } catch (err) {
        reply({ ok: false, error: (err as Error).message });
      }
    })();
  });
}

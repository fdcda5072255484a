// Control requests from the parent process that forked this engine host (the VS Code extension),
// over the IPC channel: start, stop, poll, retry, cancel, hold, release, trust. They travel here
// rather than over HTTP, which takes control only when a token is configured (contract section 8).
import type { FromHostMessage, ToHostMessage } from '../shared/hostProtocol';
import type { RunningHost } from './engineHost';

/** Serves control requests from a parent process (the VS Code extension) over the IPC channel. */
export function serveControlChannel(host: RunningHost, send: (m: FromHostMessage) => void): void {
  process.on('message', (raw: unknown) => {
    const message = raw as ToHostMessage;
    if (!message || message.type !== 'control') return;
    const reply = (result: { ok: true; result?: unknown } | { ok: false; error: string }) =>
      send({ type: 'controlResult', requestId: message.requestId, ...result });
    void (async () => {
      try {
        const engine = host.engine;
        switch (message.command) {
          case 'start':
            engine.startLaunching();
            return reply({ ok: true });
          case 'stop':
            engine.stopLaunching();
            return reply({ ok: true });
          case 'pollNow':
            await engine.pollNow();
            return reply({ ok: true });
          case 'retryItem':
            engine.retryItem(message.itemId);
            return reply({ ok: true, result: engine.itemDetail(message.itemId) });
          // Section 8: each answers with the item as GET /items/{id} reports it after the change.
          case 'cancelItem':
            engine.cancelItem(message.itemId);
            return reply({ ok: true, result: engine.itemDetail(message.itemId) });
          case 'holdItem':
            engine.holdItem(message.itemId);
            return reply({ ok: true, result: engine.itemDetail(message.itemId) });
          case 'releaseItem':
            engine.releaseItem(message.itemId);
            return reply({ ok: true, result: engine.itemDetail(message.itemId) });
          case 'retryAllFailed':
            return reply({ ok: true, result: engine.retryAllFailed() });
          case 'grantTrust':
            engine.grantTrust();
            return reply({ ok: true });
          case 'holdDrafts':
            engine.drafts.hold(message.client, message.paths, message.forMs);
            return reply({ ok: true });
          case 'ingestDraft':
            engine.drafts.ingest(message.path);
            await engine.pollNow();
            return reply({ ok: true });
          default:
            return reply({ ok: false, error: `unknown control command ${(message as { command: string }).command}` });
        }
      } catch (err) {
        reply({ ok: false, error: (err as Error).message });
      }
    })();
  });
}

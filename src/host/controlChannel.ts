// Control requests (start, stop, poll, retry, cancel, hold, release, trust, drafts) as the engine
// host runs them, whichever way they arrive: the control connection windows attach with
// (controlServer.ts), or the IPC channel of a parent that forked the host (tests and tools). They
// travel there rather than over HTTP, which takes control only when a token is configured. Every
// command is one entry of the control-command table shared with the HTTP routes.
import type { ControlCommand, FromHostMessage, ToHostMessage } from '../shared/hostProtocol';
import type { RunningHost } from './engineHost';
import { runChannelCommand } from '../core/features/control/commands';

export type ControlResult = { ok: true; result?: unknown } | { ok: false; error: string };

/** Runs one control command; a refusal (no such item, not pending…) is an answer, not a throw. */
export async function runControl(host: RunningHost, command: ControlCommand): Promise<ControlResult> {
  try {
    const result = await runChannelCommand(host.engine, command);
    return result === undefined ? { ok: true } : { ok: true, result };
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

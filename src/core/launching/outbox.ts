// Everything the engine says to a helper in one turn of its event loop goes as one packet: Node's
// IPC costs a stringify, a pipe write and, on the helper's side, a read and a parse per packet, and
// a dispatch round says a launch per attempt (docs/PERFORMANCE.md). Order is kept within the
// outbox, and every message to a helper goes through it.
import type { ChildProcess } from 'node:child_process';
import type { LaunchHelperPacket, ToLaunchHelper } from './protocol';

/** What an outbox needs of a helper: its process and the messages said to it this turn. */
export interface Addressee {
  child: ChildProcess;
  outbox: ToLaunchHelper[];
}

/** Says `m` to the helper with everything else said to it in this turn, once the turn's callbacks and their promises have run. */
export function post(h: Addressee, m: ToLaunchHelper): void {
  h.outbox.push(m);
  if (h.outbox.length === 1) setImmediate(() => sendOutbox(h));
}

/** Sends what the outbox holds now (a close is sent at once, after whatever this turn said before it). */
export function sendOutbox(h: Addressee): void {
  if (h.outbox.length === 0) return;
  const packet: LaunchHelperPacket<ToLaunchHelper> = h.outbox.length === 1 ? h.outbox[0] : h.outbox;
  h.outbox = [];
  // A helper that is gone fails the attempts it was sent when its exit is seen; a failed send
  // means it is dying, and the same holds.
  if (h.child.connected) h.child.send(packet, () => undefined);
}

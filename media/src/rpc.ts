// Queries and commands to the extension host, matched to their responses by request id.
import type { ItemAction } from '../../src/shared/itemActions';
import type { DashboardCommand, HostToWebview, QueryKind, QueryMap, QueryRequest } from '../../src/shared/webviewProtocol';
import { vscodeApi } from './vscodeApi';

type Pending = { resolve(value: unknown): void; reject(err: Error): void };
const pending = new Map<number, Pending>();
let nextRequestId = 1;

function send(post: (requestId: number) => void): Promise<unknown> {
  const requestId = nextRequestId++;
  return new Promise((resolve, reject) => {
    pending.set(requestId, { resolve, reject });
    post(requestId);
  });
}

export function query<K extends QueryKind>(kind: K, params: QueryMap[K]['params']): Promise<QueryMap[K]['result']> {
  return send((requestId) =>
    vscodeApi.postMessage({ type: 'query', requestId, kind, params } as QueryRequest),
  ) as Promise<QueryMap[K]['result']>;
}

export function runCommand(command: DashboardCommand): Promise<void> {
  return send((requestId) => vscodeApi.postMessage({ type: 'runCommand', requestId, command })).then(() => undefined);
}

/** Settles the matching request; returns false for messages that are not responses. */
export function settle(message: HostToWebview): boolean {
  if (message.type !== 'response') return false;
  const p = pending.get(message.requestId);
  if (!p) return true;
  pending.delete(message.requestId);
  if (message.ok) p.resolve(message.result);
  else p.reject(new Error(message.error));
  return true;
}

/** "Open in Terminal": the extension's Show Output command for one attempt. */
export function showOutput(itemId: string, attempt: number): Promise<void> {
  return send((requestId) => vscodeApi.postMessage({ type: 'showOutput', requestId, itemId, attempt })).then(() => undefined);
}

/** The item detail's Retry, Cancel, Hold and Release: the extension's command of that name for the item. */
export function itemAction(itemId: string, action: ItemAction): Promise<void> {
  return send((requestId) => vscodeApi.postMessage({ type: 'itemAction', requestId, itemId, action })).then(() => undefined);
}

/** The item detail's source link: the item's queue file in an editor, at its entry. */
export function openSource(itemId: string): Promise<void> {
  return send((requestId) => vscodeApi.postMessage({ type: 'openSource', requestId, itemId })).then(() => undefined);
}

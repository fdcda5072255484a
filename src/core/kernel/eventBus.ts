// The engine's listeners: the HTTP server's /events stream and the host's change notices.
import type { EngineEvent } from './monitoredEngine';

export type EngineListener = (event: EngineEvent) => void;

export class EngineEventBus {
  private readonly listeners = new Set<EngineListener>();

  /** Lets the engine skip building an event nobody would receive (one per log entry). */
  get hasListeners(): boolean {
    return this.listeners.size > 0;
  }

  /** Returns the function that unsubscribes. */
  subscribe(listener: EngineListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Synchronous; a listener that throws is reported and does not keep the event from the others. */
  emit(event: EngineEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        console.error('engine event listener failed:', err);
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}

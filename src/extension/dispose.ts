// A Disposable base in the style of vscode-hexeditor's dispose.ts: children are registered as they
// are created and disposed in reverse order, so later objects (which may depend on earlier ones)
// go first.
import type * as vscode from 'vscode';

export function disposeAll(disposables: vscode.Disposable[]): void {
  while (disposables.length) {
    const d = disposables.pop();
    try {
      d?.dispose();
    } catch (err) {
      // One failing dispose must not keep the others alive.
      console.error('[engine-monitor] dispose failed', err);
    }
  }
}

export abstract class Disposable implements vscode.Disposable {
  private readonly _disposables: vscode.Disposable[] = [];
  private _isDisposed = false;

  protected get isDisposed(): boolean {
    return this._isDisposed;
  }

  protected _register<T extends vscode.Disposable>(value: T): T {
    if (this._isDisposed) {
      value.dispose();
    } else {
      this._disposables.push(value);
    }
    return value;
  }

  dispose(): void {
    if (this._isDisposed) return;
    this._isDisposed = true;
    disposeAll(this._disposables);
  }
}

/** A Disposable from a plain callback (timers, listeners on Node emitters). */
export function toDisposable(fn: () => void): vscode.Disposable {
  let done = false;
  return {
    dispose() {
      if (!done) {
        done = true;
        fn();
      }
    },
  };
}

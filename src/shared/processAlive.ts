// Whether a process exists, for the engine host's lock and for windows that attach to a host they
// did not start. No vscode import: both sides use it.

/** Whether a process with this pid exists (EPERM: it does, another user's). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

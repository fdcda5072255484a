// Moved to src/shared so the command-line client (src/host/client) parses /events the same way.
export * from '../shared/sse';

// Its old path, kept only for files that other work moves at the same time; they import
// ./kernel/monitoredEngine once they land, and this file goes.
export * from './kernel/monitoredEngine';

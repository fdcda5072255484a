// Its old path, kept only for files that other work moves at the same time; they import
// ./features/output/outputCapture once they land, and this file goes.
export * from './features/output/outputCapture';

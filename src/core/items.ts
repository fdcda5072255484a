// Its old path, kept only for files that other work moves at the same time; they import
// ./intake/items once they land, and this file goes.
export * from './intake/items';

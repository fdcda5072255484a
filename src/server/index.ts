// Public surface of the HTTP server module: the engine host imports from here.
export { startHttpServer, DEFAULT_TIMEOUTS, MAX_HEADER_BYTES } from './server';
export type { HttpServerOptions, RunningHttpServer, ServerTimeouts } from './server';
export type { EventHubOptions } from './events';
export { buildOpenApiDocument } from './openapi';
export type { EngineEvent, HealthSnapshot, LogPage, LogQuery, MonitoredEngine } from '../core/kernel/monitoredEngine';

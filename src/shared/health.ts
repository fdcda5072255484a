// The health rule, in one place for the engine's /health and for the dashboard, which derives
// health from /status when /health cannot be read (it answers 503 when unhealthy).
import { ENGINE_NAME, type DatabaseCheck, type EngineState, type HealthResponse, type HealthStatus } from './api';

export interface HealthChecks {
  database: DatabaseCheck;
  engine: EngineState;
}

/**
 * Unhealthy when nothing can be persisted or the poll loop is stuck; degraded while the engine
 * does not launch on purpose (stopped by the user, or the workspace is not trusted).
 */
export function healthStatus(checks: HealthChecks): HealthStatus {
  if (checks.database === 'error' || checks.engine === 'stalled') return 'unhealthy';
  if (checks.engine === 'stopped' || checks.engine === 'restricted') return 'degraded';
  return 'healthy';
}

/** The /health body for the engine's checks now: what GET /health answers and hooks receive. */
export function healthBody(snapshot: { status: HealthStatus; checks: HealthChecks }, version: string): HealthResponse {
  return {
    status: snapshot.status,
    engine: ENGINE_NAME,
    version,
    timestamp: new Date().toISOString(),
    checks: { database: snapshot.checks.database, engine: snapshot.checks.engine },
  };
}

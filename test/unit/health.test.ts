// The health rule shared by the engine's /health and the dashboard's fallback from /status: every
// combination of checks, so the two can never disagree on one.
import assert from 'node:assert/strict';
import { healthStatus } from '../../src/shared/health';
import type { DatabaseCheck, EngineState, HealthStatus, StatusResponse } from '../../src/shared/api';
import { healthFromStatus } from '../../src/extension/dashboard/dashboardQueries';

describe('health rule', () => {
  const expected: Record<DatabaseCheck, Record<EngineState, HealthStatus>> = {
    ok: { running: 'healthy', stopped: 'degraded', restricted: 'degraded', stalled: 'unhealthy' },
    error: { running: 'unhealthy', stopped: 'unhealthy', restricted: 'unhealthy', stalled: 'unhealthy' },
  };

  for (const database of ['ok', 'error'] as const) {
    for (const engine of ['running', 'stopped', 'restricted', 'stalled'] as const) {
      it(`database ${database}, engine ${engine}: ${expected[database][engine]}`, () => {
        assert.equal(healthStatus({ database, engine }), expected[database][engine]);
      });
    }
  }

  it('is what the dashboard derives from /status when /health cannot be read', () => {
    const status = {
      engine: { name: 'launch-engine', version: '1.0.0', state: 'running' },
      database: { lastError: 'disk full' },
      timestamp: '2024-01-01T00:00:00.000Z',
    } as unknown as StatusResponse;
    assert.deepEqual(healthFromStatus(status), {
      status: 'unhealthy',
      engine: 'launch-engine',
      version: '1.0.0',
      timestamp: '2024-01-01T00:00:00.000Z',
      checks: { database: 'error', engine: 'running' },
    });
  });
});

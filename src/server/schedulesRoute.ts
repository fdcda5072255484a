// GET /schedules: every schedule template with its next and last run. A
// handful of rows, computed from the templates (croner's next occurrence), so it is answered at once.
import type { Router } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MonitoredEngine } from '../core/kernel/monitoredEngine';
import { parseParams, queryStringOf } from './params';
import { sendJson } from './respond';

export function addSchedulesRoute(app: Router, engine: MonitoredEngine): void {
  app.get('/schedules', (req: IncomingMessage, res: ServerResponse) => {
    const query = queryStringOf(req.url);
    if (query !== '') parseParams(query, []);
    // An engine without schedules (a read-only test double, an older remote) has none to list.
    sendJson(res, 200, engine.listSchedules?.() ?? []);
  });
}

// The dashboard's thread: the server and the metric-file tail run here, beside the process
// that owns the job. A process that trains in its own main thread (`tsddp train
// --dashboard`, no launcher) seldom gives its event loop a turn, so the page would stall;
// here it never does. Messages: in, {event} and {finish}; out, {ready, url} or {error}, then {closed}.
import { parentPort, workerData } from 'node:worker_threads';
import type { DashboardEvent } from './events.ts';
import { DashboardServer } from './server.ts';
import { MetricsTail } from './tail.ts';

export interface ThreadSpec {
  port: number;
  metricsFile: string;
  ranks: number[];
}

export type ToThread = { kind: 'event'; event: DashboardEvent } | { kind: 'finish'; event: DashboardEvent };
export type FromThread =
  | { kind: 'ready'; url: string }
  | { kind: 'error'; message: string; dashboardError: boolean }
  | { kind: 'closed' };

async function main(spec: ThreadSpec, port: NonNullable<typeof parentPort>): Promise<void> {
  const post = (m: FromThread) => port.postMessage(m);
  let server: DashboardServer;
  try {
    server = await DashboardServer.start({ port: spec.port });
  } catch (e) {
    const err = e as Error;
    post({ kind: 'error', message: err.message, dashboardError: err.name === 'DashboardError' });
    return;
  }
  const tail = new MetricsTail(spec.metricsFile, spec.ranks, (e) => server.publish(e)).start();
  port.on('message', async (m: ToThread) => {
    if (m.kind === 'event') {
      server.publish(m.event);
      return;
    }
    // The job ended: what the workers wrote last, then the end, then close.
    tail.close();
    server.publish(m.event);
    await server.close();
    post({ kind: 'closed' });
    port.close();
  });
  post({ kind: 'ready', url: server.url });
}

if (parentPort !== null) void main(workerData as ThreadSpec, parentPort);

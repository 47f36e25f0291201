// The live training dashboard (`--dashboard [port]`): a page on 127.0.0.1 fed by
// server-sent events from the ranks' metric files and the launcher.
export {
  type AttemptEvent,
  type DashboardEvent,
  type EndEvent,
  endStatus,
  type FailureEvent,
  type JobEvent,
  type LauncherEvent,
  type TruncateEvent,
} from './events.ts';
export { launchWithDashboard, runWithDashboard } from './launch.ts';
export {
  DASHBOARD_HOST,
  DashboardError,
  type DashboardOptions,
  DashboardServer,
} from './server.ts';
export {
  type DashboardJob,
  type DashboardReporter,
  defaultMetricsFile,
  METRICS_FILE_ENV,
  withDashboard,
} from './session.ts';
export { MetricsTail } from './tail.ts';

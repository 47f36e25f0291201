// Running a job inside a dashboard session: the launcher's --dashboard (its workers write
// their metrics where the dashboard reads them; restarts and failures go to the page), and
// a single `tsddp train --dashboard` process. The CLI composes these with the launcher
// (cli/launch-job.ts), so the launcher knows nothing of the dashboard (architecture §6).
import type { AgentHooks } from '../launch/agent.ts';
import type { LaunchConfig } from '../launch/options.ts';
import { DashboardError } from './server.ts';
import {
  type DashboardJob,
  type DashboardReporter,
  defaultMetricsFile,
  METRICS_FILE_ENV,
  withDashboard,
} from './session.ts';

/**
 * Runs `job` while the dashboard is served and resolves with its exit code; a port that
 * cannot be had is logged (`error: ...`) and gives 1.
 */
export async function runWithDashboard(
  spec: Omit<DashboardJob, 'log'>,
  log: (msg: string) => void,
  job: (report: DashboardReporter) => Promise<number>,
): Promise<number> {
  try {
    return await withDashboard(
      { ...spec, log: (line) => log(`${line} (metrics: ${spec.metricsFile})`) },
      job,
    );
  } catch (e) {
    if (!(e instanceof DashboardError)) throw e;
    log(`error: ${e.message}`);
    return 1;
  }
}

/** The launcher's --dashboard: `run` starts the agent with the hooks that feed the page. */
export async function launchWithDashboard(
  cfg: LaunchConfig,
  run: (hooks: AgentHooks) => Promise<number>,
  log: (msg: string) => void,
): Promise<number> {
  const dash = cfg.dashboard as NonNullable<LaunchConfig['dashboard']>;
  const metricsFile = dash.metricsFile ?? defaultMetricsFile(cfg.runId, cfg.logDir);
  const spec = {
    port: dash.port,
    metricsFile,
    runId: cfg.runId,
    worldSize: cfg.nnodes * cfg.nprocPerNode,
    maxRestarts: cfg.maxRestarts,
  };
  return runWithDashboard(spec, log, (report) =>
    run({
      workerEnv: { [METRICS_FILE_ENV]: metricsFile },
      onAttempt: report.attempt,
      onFailure: report.failure,
    }),
  );
}

// The launcher's --dashboard: the agent runs inside a dashboard session, its workers write
// their metrics where the dashboard reads them, and its restarts and failures go to the page.
import type { AgentHooks } from '../launch/agent.ts';
import type { LaunchConfig } from '../launch/options.ts';
import { DashboardError } from './server.ts';
import { defaultMetricsFile, METRICS_FILE_ENV, withDashboard } from './session.ts';

export async function launchWithDashboard(
  cfg: LaunchConfig,
  run: (hooks: AgentHooks) => Promise<number>,
  log: (msg: string) => void,
): Promise<number> {
  const dash = cfg.dashboard as NonNullable<LaunchConfig['dashboard']>;
  const metricsFile = dash.metricsFile ?? defaultMetricsFile(cfg.runId, cfg.logDir);
  try {
    return await withDashboard(
      {
        port: dash.port,
        metricsFile,
        runId: cfg.runId,
        worldSize: cfg.nnodes * cfg.nprocPerNode,
        maxRestarts: cfg.maxRestarts,
        log: (line) => log(`${line} (metrics: ${metricsFile})`),
      },
      (report) =>
        run({
          workerEnv: { [METRICS_FILE_ENV]: metricsFile },
          onAttempt: report.attempt,
          onFailure: report.failure,
        }),
    );
  } catch (e) {
    if (!(e instanceof DashboardError)) throw e;
    log(`error: ${e.message}`);
    return 1;
  }
}

// `tsddp run` / `tsrun` / `tsddp train --nproc-per-node`: the launcher's agent, inside a
// dashboard session when --dashboard is given. Composed here, so the launcher knows
// nothing of the dashboard (architecture §6).
import { type AgentHooks, log } from '../launch/agent.ts';
import { launch } from '../launch/launch.ts';
import type { LaunchConfig } from '../launch/options.ts';

/** Runs the job; `workerEnv` is added to every worker's environment. */
export async function launchJob(cfg: LaunchConfig, workerEnv: Record<string, string> = {}): Promise<number> {
  if (cfg.dashboard === undefined) return launch(cfg, { workerEnv });
  const { launchWithDashboard } = await import('../dashboard/launch.ts');
  const run = (hooks: AgentHooks) =>
    launch(cfg, { ...hooks, workerEnv: { ...hooks.workerEnv, ...workerEnv } });
  return launchWithDashboard(cfg, run, log);
}

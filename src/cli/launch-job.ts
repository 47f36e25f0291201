// `tsddp run` / `tsrun` / `tsddp train --nproc-per-node`: the launcher's agent, inside a
// dashboard session when --dashboard is given. Composed here, so the launcher knows
// nothing of the dashboard (architecture §6).
import { launch, log } from '../launch/agent.ts';
import type { LaunchConfig } from '../launch/options.ts';

export async function launchJob(cfg: LaunchConfig): Promise<number> {
  if (cfg.dashboard === undefined) return launch(cfg);
  const { launchWithDashboard } = await import('../dashboard/launch.ts');
  return launchWithDashboard(cfg, (hooks) => launch(cfg, hooks), log);
}

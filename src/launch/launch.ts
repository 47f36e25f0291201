// `tsrun`'s entry point: the agent, whose one loop runs the static or the c10d rendezvous
// as the configuration says (agent.ts).
import { Agent, type AgentHooks } from './agent.ts';
import type { LaunchConfig } from './options.ts';

/**
 * Runs a job as `tsrun` does; resolves with the exit code for the launcher. The launcher
 * knows no dashboard: `tsddp run --dashboard` composes one around the agent through
 * AgentHooks (src/cli/launch-job.ts).
 */
export function launch(cfg: LaunchConfig, hooks: AgentHooks = {}): Promise<number> {
  return new Agent(cfg, hooks).run();
}

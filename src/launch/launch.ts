// `tsrun`'s entry point: the agent with static rendezvous, or with the elastic loop.
import { Agent, type AgentHooks } from './agent.ts';
import { runElastic } from './elastic-agent.ts';
import type { LaunchConfig } from './options.ts';

/**
 * Runs a job as `tsrun` does; resolves with the exit code for the launcher. The launcher
 * knows no dashboard: `tsddp run --dashboard` composes one around the agent through
 * AgentHooks (src/cli/launch-job.ts).
 */
export function launch(cfg: LaunchConfig, hooks: AgentHooks = {}): Promise<number> {
  const agent = new Agent(cfg, hooks);
  const { elastic } = cfg;
  return elastic ? agent.run((a) => runElastic(a, cfg, elastic, hooks)) : agent.run();
}

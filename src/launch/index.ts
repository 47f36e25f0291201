export { Agent, type AgentHooks } from './agent.ts';
export { ElasticRendezvous, type ElasticRendezvousConfig, type NodeInfo, type Round } from './elastic.ts';
export { launch } from './launch.ts';
export { glooHostnameFor, localAddressToward } from './network.ts';
export {
  DEFAULT_MASTER_PORT,
  type LaunchConfig,
  LaunchConfigError,
  parseStdSelector,
  type RawLaunchOptions,
  resolveLaunchConfig,
  type StdStreams,
} from './options.ts';
export { type FailureReport, Rendezvous, type RendezvousConfig, RendezvousError } from './rendezvous.ts';
export { guardImportUrl, LAUNCHER_PID_ENV } from './worker-guard.ts';
export { describeExit, type WorkerExit, WorkerProcess, type WorkerSpec } from './worker-process.ts';

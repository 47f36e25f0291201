export { Agent, type AgentHooks, launch } from './agent.ts';
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

// The launcher's agent, in the shape of torchelastic's SimpleElasticAgent: one loop
// (invokeRun) that meets the other nodes through a rendezvous handler (static or c10d,
// rendezvous-handler.ts), starts this node's workers (worker-group.ts) and watches them. A
// failure, here or reported by another node, restarts them in a new round within
// --max-restarts; a change of membership restarts them without counting; a success, a
// failure past the limit or a signal ends the job. The agent knows no recipe or dashboard:
// whoever runs it listens through AgentHooks (architecture §6).
import { constants as osConstants } from 'node:os';
import { debugEnabled } from '../env/index.ts';
import { openC10dRendezvous } from './c10d-handler.ts';
import { log } from './log.ts';
import { glooHostnameFor } from './network.ts';
import type { LaunchConfig } from './options.ts';
import type { RendezvousEvent, RendezvousHandler } from './rendezvous-handler.ts';
import { openStaticRendezvous } from './static-handler.ts';
import { KILL_WAIT_MS, type LocalFailure, type RoundEnd, WorkerGroup } from './worker-group.ts';

// `tsddp run --dashboard` (cli/launch-job.ts) logs as the launcher does.
export { log } from './log.ts';

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** What the launcher's dashboard (or another observer) hears from the agent. */
export interface AgentHooks {
  /** Added to every worker's environment. */
  workerEnv?: Record<string, string>;
  /** A gang of workers started: attempt 0, then one per restart. */
  onAttempt?: (attempt: number) => void;
  /** An attempt failed; `summary` is the launcher's first-failure report. */
  onFailure?: (attempt: number, summary: string) => void;
}

export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (osConstants.signals[signal] ?? 15);
}

export class Agent {
  private readonly group: WorkerGroup;
  private stopSignal: NodeJS.Signals | null = null;
  /** Aborted with the first forwarded signal: it ends the round being monitored. */
  private readonly stopping = new AbortController();
  private readonly signalHandlers = new Map<NodeJS.Signals, () => void>();
  private readonly killOnExit = () => this.group.kill();

  constructor(
    private readonly cfg: LaunchConfig,
    private readonly hooks: AgentHooks = {},
  ) {
    this.group = new WorkerGroup(cfg, hooks.workerEnv);
  }

  /** Runs the job to the end; resolves with the launcher's exit code. */
  async run(): Promise<number> {
    this.installSignals();
    let rdzv: RendezvousHandler | null = null;
    try {
      rdzv = await this.openRendezvous();
      this.announce(rdzv);
      await this.findGlooHostname(rdzv);
      return await this.invokeRun(rdzv);
    } catch (e) {
      if (this.stopSignal) return signalExitCode(this.stopSignal);
      // Rendezvous and store failures carry their explanation; TSDDP_DEBUG=1 adds the stack.
      const msg = e instanceof Error ? e.message : String(e);
      log(`error: ${debugEnabled() && e instanceof Error ? e.stack : msg}`);
      return 1;
    } finally {
      await this.group.stop('SIGTERM');
      await rdzv?.shutdown();
      this.removeSignals();
      this.group.removeHeartbeats();
    }
  }

  /** The job's backend: c10d for --rdzv-backend c10d, else the static rendezvous. */
  private openRendezvous(): Promise<RendezvousHandler> {
    const stopped = () => this.stopSignal !== null;
    const { cfg } = this;
    return cfg.elastic ? openC10dRendezvous(cfg, cfg.elastic, stopped) : openStaticRendezvous(cfg, stopped);
  }

  private announce(rdzv: RendezvousHandler): void {
    const { cfg } = this;
    if (cfg.ompNumThreads !== undefined) {
      log(
        `OMP_NUM_THREADS is not set: using ${cfg.ompNumThreads} per worker ` +
          `(cores / ${cfg.nprocPerNode} local workers); set it to override`,
      );
    }
    log(rdzv.description);
  }

  /** The address workers bind Gloo to (multi-node), found once per job. */
  private async findGlooHostname(rdzv: RendezvousHandler): Promise<void> {
    const { host, port } = rdzv.endpoint;
    const gloo = await glooHostnameFor(host, port, rdzv.maxNodes);
    this.group.glooHostname = gloo;
    if (gloo)
      log(
        `workers bind Gloo to ${gloo} (the address that reaches ${host}; set TSDDP_GLOO_HOSTNAME to override)`,
      );
  }

  /**
   * torchelastic's _invoke_run: a round of the rendezvous, this node's workers in it, and
   * what ended it, until the job succeeds, fails for good or is stopped.
   */
  private async invokeRun(rdzv: RendezvousHandler): Promise<number> {
    let failures = 0;
    for (;;) {
      const placement = await rdzv.nextRendezvous();
      if (placement === null) {
        log('the job has already finished: nothing to do');
        return 0;
      }
      this.group.start(placement);
      this.hooks.onAttempt?.(placement.attempt);
      const end = await this.monitor(rdzv);
      switch (end.kind) {
        case 'succeeded':
          log(`all ${this.cfg.nprocPerNode} worker(s) finished successfully${rdzv.wording.done}`);
          return 0;
        case 'signal':
          await this.group.stop(end.signal);
          return signalExitCode(end.signal);
        case 'storeLost':
          log(
            `error: lost the rendezvous store at ${rdzv.endpoint.host}:${rdzv.endpoint.port}: ${end.error}`,
          );
          return 1;
        case 'changed':
          log(
            `${rdzv.wording.unit} ${placement.attempt} ends: ${end.reason}; stopping the workers to re-rendezvous`,
          );
          await this.group.stop('SIGTERM');
          break;
        default:
          failures++;
          if (!(await this.failed(rdzv, end, placement.attempt, failures))) return 1;
      }
    }
  }

  /** Waits for the round to end; a success here holds until the exit barrier says the job's. */
  private async monitor(rdzv: RendezvousHandler): Promise<RoundEnd> {
    const end = await this.group.monitor(() => this.rendezvousEvent(rdzv), this.stopping.signal);
    if (end.kind !== 'succeeded') return end;
    const barrier = await rdzv.exitBarrier();
    return barrier === 'done' ? end : barrier;
  }

  /** Polled while the workers run (torchelastic asks num_nodes_waiting while they are healthy). */
  private async rendezvousEvent(rdzv: RendezvousHandler): Promise<RendezvousEvent | null> {
    if (await rdzv.peerFailed()) return { kind: 'peerFailed' };
    const reason = await rdzv.membershipChanged();
    return reason === null ? null : { kind: 'changed', reason };
  }

  /**
   * A failure here or on another node: the others hear of one here before the workers
   * are stopped (so that the job-wide first failure is the one that happened first), then
   * it is logged, and the loop restarts (true) or this node gives up (false).
   */
  private async failed(
    rdzv: RendezvousHandler,
    end: LocalFailure | { kind: 'peerFailed' },
    attempt: number,
    failures: number,
  ): Promise<boolean> {
    const { wording } = rdzv;
    if (end.kind === 'stalled') log(`watchdog: ${end.report}; stopping the ${wording.unit}`);
    const local = end.kind === 'peerFailed' ? null : end;
    if (local) await rdzv.reportFailure(() => this.group.describe(local));
    await this.group.stop('SIGTERM');
    // Described again once stopped: the summary then says how the other local workers ended.
    const summary = await rdzv.failureSummary(local && (await this.group.describe(local)));
    log(`${wording.unit} ${attempt} failed: ${summary.split('\n')[0]}`);
    this.hooks.onFailure?.(attempt, summary);
    if (failures <= this.cfg.maxRestarts) {
      log(wording.restart(failures));
      return true;
    }
    await rdzv.giveUp();
    log(`${wording.giveUp(failures)}:\n${summary}`);
    return false;
  }

  private installSignals(): void {
    for (const sig of FORWARDED) {
      const handler = () => this.signalled(sig);
      this.signalHandlers.set(sig, handler);
      process.on(sig, handler);
    }
    process.on('exit', this.killOnExit);
  }

  private removeSignals(): void {
    for (const [sig, handler] of this.signalHandlers) process.off(sig, handler);
    this.signalHandlers.clear();
    process.off('exit', this.killOnExit);
  }

  private signalled(signal: NodeJS.Signals): void {
    if (this.stopSignal) {
      // A second signal: no more grace.
      this.group.kill();
      return;
    }
    this.stopSignal = signal;
    log(`received ${signal}: stopping the workers (SIGKILL after ${this.cfg.termTimeoutMs / 1000}s)`);
    this.stopping.abort(signal);
    // Whatever happens, the launcher ends: a last-resort deadline past the grace period.
    const deadlineMs = this.cfg.termTimeoutMs + KILL_WAIT_MS + 5000;
    setTimeout(() => {
      this.group.kill();
      log(`still stopping ${deadlineMs} ms after ${signal}: exiting`);
      process.exit(signalExitCode(signal));
    }, deadlineMs).unref();
  }
}

// The launcher's agent, like torchelastic's LocalElasticAgent with static rendezvous: join
// the rendezvous, start the local workers, watch them, and on a failure stop and restart
// the whole gang (up to --max-restarts), or stop everything and report who failed first.
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../distributed/store.ts';
import { ELASTIC_ENV } from './elastic.ts';
import {
  COLLECTIVE_GRACE_MS,
  describeStall,
  HEARTBEAT_FILE_ENV,
  likelyCulpritsFirst,
  type Stall,
  StallWatch,
  waitsForPeers,
} from './heartbeat.ts';
import { glooHostnameFor } from './network.ts';
import type { LaunchConfig } from './options.ts';
import { isTypeScript, typeScriptLoader } from './options.ts';
import { connectStore, hostStore, Rendezvous } from './rendezvous.ts';
import { guardImportUrl, LAUNCHER_PID_ENV } from './worker-guard.ts';
import { describeExit, isSuccess, type WorkerExit, WorkerProcess } from './worker-process.ts';

/** Where this node's workers sit in the job for one attempt (static) or round (elastic). */
export interface Placement {
  /** TORCHELASTIC_RESTART_COUNT: the static attempt, or the elastic round (job-wide). */
  attempt: number;
  nodeRank: number;
  nnodes: number;
  /** Global rank of local rank 0. */
  rankBase: number;
  worldSize: number;
  masterAddr: string;
  masterPort: number;
  /** Elastic rounds: the world may differ from the last checkpoint's (ELASTIC_ENV). */
  elastic?: boolean;
}

export type Outcome =
  | { kind: 'succeeded' }
  | { kind: 'changed'; reason: string }
  | { kind: 'failed'; worker: WorkerProcess; exit: WorkerExit }
  | { kind: 'remote' }
  | { kind: 'storeLost'; error: string }
  | { kind: 'stalled'; worker: WorkerProcess; report: string }
  | { kind: 'signal'; signal: NodeJS.Signals };

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
// After the grace period and SIGKILL, how long to wait for the kernel to report the exits.
/** A rank without a new step for a minute is reported even without --watchdog. */
const STALL_WARNING_MS = 60_000;
const WATCHDOG_POLL_MS = 1000;
const KILL_WAIT_MS = 5000;

/** What the launcher's dashboard (or another observer) hears from the agent. */
export interface AgentHooks {
  /** Added to every worker's environment. */
  workerEnv?: Record<string, string>;
  /** A gang of workers started: attempt 0, then one per restart. */
  onAttempt?: (attempt: number) => void;
  /** An attempt failed; `summary` is the launcher's first-failure report. */
  onFailure?: (attempt: number, summary: string) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** A line from the launcher, as tsrun prints it. */
export function log(msg: string): void {
  process.stderr.write(`tsrun: ${msg}\n`);
}

export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (osConstants.signals[signal] ?? 15);
}

export class Agent {
  private workers: WorkerProcess[] = [];
  private placement: Placement | null = null;
  private stopSignal: NodeJS.Signals | null = null;
  private glooHostname: string | undefined;
  private heartbeatDir: string | undefined;
  private onSignal: ((s: NodeJS.Signals) => void) | null = null;
  private readonly signalHandlers = new Map<NodeJS.Signals, () => void>();
  private readonly killOnExit = () => this.killAll();

  constructor(
    private readonly cfg: LaunchConfig,
    private readonly hooks: AgentHooks = {},
  ) {}

  /**
   * Runs the job to the end; resolves with the launcher's exit code. `rounds` replaces the
   * static rendezvous (the elastic loop, elastic-agent.ts); signals and cleanup stay here.
   */
  async run(rounds?: (agent: Agent) => Promise<number>): Promise<number> {
    this.installSignals();
    let store: Store | null = null;
    try {
      const { cfg } = this;
      if (rounds) return await rounds(this);
      store =
        cfg.nodeRank === 0
          ? hostStore(cfg.masterAddr, cfg.masterPort)
          : await connectStore(cfg.masterAddr, cfg.masterPort, cfg.rdzvTimeoutMs, () => this.stopped());
      const port = cfg.nodeRank === 0 ? store.port : cfg.masterPort;
      const rdzv = new Rendezvous(store, {
        masterAddr: cfg.masterAddr,
        masterPort: port,
        nnodes: cfg.nnodes,
        nodeRank: cfg.nodeRank,
        runId: cfg.runId,
        timeoutMs: cfg.rdzvTimeoutMs,
      });
      this.announce(port);
      await this.findGlooHostname(cfg.masterAddr, port, cfg.nnodes);
      return await this.attempts(rdzv, port);
    } catch (e) {
      if (this.stopSignal) return signalExitCode(this.stopSignal);
      // Rendezvous and store failures carry their explanation; TSRUN_DEBUG=1 adds the stack.
      const msg = e instanceof Error ? e.message : String(e);
      log(`error: ${process.env.TSRUN_DEBUG === '1' && e instanceof Error ? e.stack : msg}`);
      return 1;
    } finally {
      await this.stopWorkers('SIGTERM');
      store?.close();
      this.removeSignals();
      if (this.heartbeatDir) rmSync(this.heartbeatDir, { recursive: true, force: true });
    }
  }

  /** Where the worker of `rank` writes its heartbeat in `attempt` (heartbeat.ts). */
  heartbeatFile(attempt: number, rank: number): string {
    this.heartbeatDir ??= mkdtempSync(join(tmpdir(), 'tsrun-heartbeat-'));
    return join(this.heartbeatDir, `attempt${attempt}-rank${rank}`);
  }

  stopped(): boolean {
    return this.stopSignal !== null;
  }

  /** The address workers bind Gloo to (multi-node), found once per job. */
  async findGlooHostname(masterAddr: string, port: number, nnodes: number): Promise<void> {
    this.glooHostname = await glooHostnameFor(masterAddr, port, nnodes);
    if (this.glooHostname)
      log(
        `workers bind Gloo to ${this.glooHostname} (the address that reaches ${masterAddr}; set TSDDP_GLOO_HOSTNAME to override)`,
      );
  }

  private announce(port: number): void {
    const { cfg } = this;
    if (cfg.ompNumThreads !== undefined) {
      log(
        `OMP_NUM_THREADS is not set: using ${cfg.ompNumThreads} per worker ` +
          `(cores / ${cfg.nprocPerNode} local workers); set it to override`,
      );
    }
    log(
      `run id ${cfg.runId}: node ${cfg.nodeRank} of ${cfg.nnodes}, ${cfg.nprocPerNode} worker(s) here, ` +
        `world size ${cfg.nnodes * cfg.nprocPerNode}; rendezvous store on ${cfg.masterAddr}:${port}` +
        (cfg.logDir ? `; logs in ${join(cfg.logDir, cfg.runId)}` : ''),
    );
  }

  private async attempts(rdzv: Rendezvous, port: number): Promise<number> {
    const { cfg } = this;
    for (let attempt = 0; ; attempt++) {
      await rdzv.join(attempt, () => this.stopped());
      this.spawnWorkers({
        attempt,
        nodeRank: cfg.nodeRank,
        nnodes: cfg.nnodes,
        rankBase: cfg.nodeRank * cfg.nprocPerNode,
        worldSize: cfg.nnodes * cfg.nprocPerNode,
        masterAddr: cfg.masterAddr,
        masterPort: port,
      });
      // Other nodes' failures arrive through the store.
      let outcome = await this.monitor(
        attempt,
        cfg.nnodes > 1 ? async () => (rdzv.failed(attempt) ? { kind: 'remote' } : null) : null,
      );
      if (outcome.kind === 'succeeded') {
        if (cfg.nnodes === 1 || (await rdzv.finish(attempt, () => this.stopped())) === 'done') {
          log(`all ${cfg.nprocPerNode} worker(s) finished successfully`);
          return 0;
        }
        outcome = { kind: 'remote' };
      }
      if (outcome.kind === 'signal') {
        await this.stopWorkers(outcome.signal);
        return signalExitCode(outcome.signal);
      }
      if (outcome.kind === 'changed') throw new Error('internal: a static rendezvous does not change');
      if (outcome.kind === 'stalled') log(`watchdog: ${outcome.report}; stopping the attempt`);
      // Tell the other nodes at once (before the grace period), so that the job-wide first
      // failure is the one that happened first.
      if ((outcome.kind === 'failed' || outcome.kind === 'stalled') && cfg.nnodes > 1) {
        if (outcome.kind === 'failed') await outcome.worker.closed;
        try {
          rdzv.reportFailure(attempt, this.summaryOf(outcome));
        } catch {
          // The store is gone; the other nodes will notice that themselves.
        }
      }
      await this.stopWorkers('SIGTERM');
      let summary: string;
      if (outcome.kind === 'failed' || outcome.kind === 'stalled') {
        if (outcome.kind === 'failed') await outcome.worker.closed;
        summary = this.summaryOf(outcome);
        const first = cfg.nnodes > 1 ? await rdzv.firstFailure(attempt) : null;
        if (first && first.node !== cfg.nodeRank)
          summary = `${first.summary}\n  on this node, then: ${summary.replaceAll('\n', '\n  ')}`;
      } else if (outcome.kind === 'remote') {
        const report = await rdzv.firstFailure(attempt);
        summary = report ? report.summary : 'another node reported a failure';
      } else {
        log(`error: lost the rendezvous store at ${rdzv.where()}: ${outcome.error}`);
        return 1;
      }
      log(`attempt ${attempt} failed: ${summary.split('\n')[0]}`);
      this.hooks.onFailure?.(attempt, summary);
      if (attempt < cfg.maxRestarts) {
        log(`restarting all workers (restart ${attempt + 1} of --max-restarts ${cfg.maxRestarts})`);
        continue;
      }
      try {
        await rdzv.depart(attempt);
      } catch {
        // The store is gone: nobody is left to tell.
      }
      const restarts = cfg.maxRestarts === 0 ? 'no restarts allowed' : `after ${attempt} restart(s)`;
      log(`job failed (${restarts}, --max-restarts ${cfg.maxRestarts}); first failure:\n${summary}`);
      return 1;
    }
  }

  /** Starts the local workers of one attempt (or elastic round). */
  spawnWorkers(p: Placement): void {
    const { cfg } = this;
    const { attempt, worldSize: world } = p;
    this.placement = p;
    const args = [
      ...(isTypeScript(cfg.script) ? ['--import', cfg.loader ?? typeScriptLoader(cfg.script)] : []),
      '--import',
      guardImportUrl(),
      cfg.script,
      ...cfg.scriptArgs,
    ];
    this.workers = [];
    for (let local = 0; local < cfg.nprocPerNode; local++) {
      const rank = p.rankBase + local;
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        RANK: String(rank),
        LOCAL_RANK: String(local),
        WORLD_SIZE: String(world),
        LOCAL_WORLD_SIZE: String(cfg.nprocPerNode),
        GROUP_RANK: String(p.nodeRank),
        GROUP_WORLD_SIZE: String(p.nnodes),
        ROLE_NAME: 'default',
        ROLE_RANK: String(rank),
        ROLE_WORLD_SIZE: String(world),
        MASTER_ADDR: p.masterAddr,
        MASTER_PORT: String(p.masterPort),
        TORCHELASTIC_RESTART_COUNT: String(attempt),
        TORCHELASTIC_MAX_RESTARTS: String(cfg.maxRestarts),
        TORCHELASTIC_RUN_ID: cfg.runId,
        TORCHELASTIC_USE_AGENT_STORE: 'True',
        TSDDP_USE_AGENT_STORE: '1',
        [LAUNCHER_PID_ENV]: String(process.pid),
        [HEARTBEAT_FILE_ENV]: this.heartbeatFile(attempt, rank),
      };
      if (p.elastic) env[ELASTIC_ENV] = '1';
      Object.assign(env, this.hooks.workerEnv);
      if (cfg.ompNumThreads !== undefined) env.OMP_NUM_THREADS = String(cfg.ompNumThreads);
      // Workers write to pipes; tell them the console is a terminal, so that a progress
      // line is redrawn in place (StreamSink passes it through).
      if (process.stdout.isTTY) env.TSDDP_TTY = '1';
      if (this.glooHostname) env.TSDDP_GLOO_HOSTNAME = this.glooHostname;
      this.workers.push(
        new WorkerProcess({
          rank,
          localRank: local,
          command: process.execPath,
          args,
          env,
          console: cfg.consoleStreams[local],
          files: cfg.fileStreams[local],
          logDir: cfg.logDir && join(cfg.logDir, cfg.runId, `attempt_${attempt}`, `rank_${rank}`),
        }),
      );
    }
    this.hooks.onAttempt?.(attempt);
  }

  /**
   * Waits for the first event that ends this attempt; `remote` (polled every
   * --monitor-interval) reports what other nodes did.
   */
  monitor(attempt: number, remote: (() => Promise<Outcome | null>) | null): Promise<Outcome> {
    return new Promise<Outcome>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let watchdog: NodeJS.Timeout | undefined;
      let done = false;
      const finish = (o: Outcome) => {
        if (done) return;
        done = true;
        clearInterval(timer);
        clearInterval(watchdog);
        this.onSignal = null;
        resolve(o);
      };
      if (this.stopSignal) return finish({ kind: 'signal', signal: this.stopSignal });
      this.onSignal = (signal) => finish({ kind: 'signal', signal });
      let running = this.workers.length;
      for (const worker of this.workers) {
        void worker.exited.then((exit) => {
          if (!isSuccess(exit)) finish({ kind: 'failed', worker, exit });
          else if (--running === 0) finish({ kind: 'succeeded' });
        });
      }
      // Ranks that stopped making steps (heartbeat.ts): a warning, or with --watchdog a failure.
      const watch = new StallWatch(
        this.workers.map((w) => ({
          rank: w.rank,
          pid: w.pid ?? 0,
          file: this.heartbeatFile(attempt, w.rank),
        })),
      );
      const stallMs = this.cfg.watchdogMs > 0 ? this.cfg.watchdogMs : STALL_WARNING_MS;
      watchdog = setInterval(() => {
        const stalls = watch.stalled(Math.min(stallMs, STALL_WARNING_MS));
        // A rank waiting in a collective is most likely held up by a peer: it gets a grace
        // period, so the culprit's node reports first (heartbeat.ts).
        const limit = (s: Stall) => this.cfg.watchdogMs + (waitsForPeers(s) ? COLLECTIVE_GRACE_MS : 0);
        if (this.cfg.watchdogMs > 0 && stalls.some((s) => s.secs * 1000 >= limit(s))) {
          // Every stalled rank, with what it was doing; the likely culprits first.
          const over = likelyCulpritsFirst(stalls.filter((s) => s.secs * 1000 >= this.cfg.watchdogMs));
          const worker = this.workers.find((w) => w.rank === over[0].rank) as WorkerProcess;
          finish({
            kind: 'stalled',
            worker,
            report: over.map((s) => describeStall(s, hostname())).join('; '),
          });
          return;
        }
        for (const s of stalls) {
          if (!watch.firstReport(s.rank)) continue;
          const hint = this.cfg.watchdogMs > 0 ? '' : ' (--watchdog SECONDS stops such an attempt)';
          log(`warning: ${describeStall(s, hostname())}${hint}`);
        }
      }, WATCHDOG_POLL_MS);
      if (remote) {
        let busy = false;
        timer = setInterval(() => {
          if (busy) return;
          busy = true;
          remote()
            .then((o) => o && finish(o))
            .catch((e: unknown) =>
              finish({ kind: 'storeLost', error: e instanceof Error ? e.message.split('\n')[0] : String(e) }),
            )
            .finally(() => {
              busy = false;
            });
        }, this.cfg.monitorIntervalMs);
      }
    });
  }

  summaryOf(o: Extract<Outcome, { kind: 'failed' | 'stalled' }>): string {
    if (o.kind === 'failed') return this.failureSummary(o.worker, o.exit);
    return `${o.report} (--watchdog ${this.cfg.watchdogMs / 1000} s)`;
  }

  private failureSummary(worker: WorkerProcess, exit: WorkerExit): string {
    const lines = [
      `rank ${worker.rank} (local rank ${worker.localRank} on node ${this.placement?.nodeRank} at ${hostname()}, pid ${worker.pid}) ${describeExit(exit)}`,
    ];
    for (const w of this.workers) {
      if (w === worker || !w.exit) continue;
      lines.push(`  then: rank ${w.rank} ${describeExit(w.exit)}`);
    }
    const tail = worker.stderrTail();
    if (tail.length === 0) lines.push(`  (rank ${worker.rank} wrote nothing to stderr)`);
    else {
      lines.push(`  last ${tail.length} line(s) of rank ${worker.rank}'s stderr:`);
      for (const l of tail) lines.push(`    | ${l}`);
    }
    return lines.join('\n');
  }

  /**
   * Stops every local worker: the signal to each process group (with SIGCONT, so a stopped
   * worker can act on it), SIGKILL after --term-timeout, and waits for the exits.
   */
  async stopWorkers(signal: NodeJS.Signals): Promise<void> {
    const workers = this.workers;
    if (workers.length === 0) return;
    const exited = () => Promise.all(workers.map((w) => w.exited));
    if (signal !== 'SIGKILL' && workers.some((w) => !w.exit)) {
      for (const w of workers) {
        w.signalGroup(signal);
        w.signalGroup('SIGCONT');
      }
      await Promise.race([exited(), sleep(this.cfg.termTimeoutMs)]);
    }
    // Always: exited workers may have left children in their group.
    for (const w of workers) w.signalGroup('SIGKILL');
    await Promise.race([exited(), sleep(KILL_WAIT_MS)]);
    await Promise.all(workers.map((w) => w.closed));
  }

  private killAll(): void {
    for (const w of this.workers) w.signalGroup('SIGKILL');
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
      this.killAll();
      return;
    }
    this.stopSignal = signal;
    log(`received ${signal}: stopping the workers (SIGKILL after ${this.cfg.termTimeoutMs / 1000}s)`);
    this.onSignal?.(signal);
    // Whatever happens, the launcher ends: a last-resort deadline past the grace period.
    setTimeout(
      () => {
        this.killAll();
        log(`still stopping ${this.cfg.termTimeoutMs + KILL_WAIT_MS + 5000} ms after ${signal}: exiting`);
        process.exit(signalExitCode(signal));
      },
      this.cfg.termTimeoutMs + KILL_WAIT_MS + 5000,
    ).unref();
  }
}

// This node's workers for one attempt or round: the process side of the agent (torchelastic's
// LocalElasticAgent: start, monitor, stop). It starts them with torchrun's environment,
// waits for what ends the round (an exit, a rank whose heartbeat stopped, an event the
// rendezvous reports, a signal), stops their process groups, and writes the failure summary
// the launcher prints. The loop that decides what comes next is the agent's (agent.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { log } from './log.ts';
import { isTypeScript, type LaunchConfig, typeScriptLoader } from './options.ts';
import type { Placement, RendezvousEvent } from './rendezvous-handler.ts';
import { guardImportUrl, LAUNCHER_PID_ENV } from './worker-guard.ts';
import { describeExit, isSuccess, type WorkerExit, WorkerProcess } from './worker-process.ts';

/** What ended a round of this node's workers. */
export type RoundEnd =
  | { kind: 'succeeded' }
  | LocalFailure
  | { kind: 'signal'; signal: NodeJS.Signals }
  | { kind: 'storeLost'; error: string }
  | RendezvousEvent;

/** A failure of this node's own workers: one exited badly, or (--watchdog) made no step. */
export type LocalFailure =
  | { kind: 'failed'; worker: WorkerProcess; exit: WorkerExit }
  | { kind: 'stalled'; worker: WorkerProcess; report: string };

/** A rank without a new step for a minute is reported even without --watchdog. */
const STALL_WARNING_MS = 60_000;
const WATCHDOG_POLL_MS = 1000;
/** After the grace period and SIGKILL, how long to wait for the kernel to report the exits. */
export const KILL_WAIT_MS = 5000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export class WorkerGroup {
  /** TSDDP_GLOO_HOSTNAME for the workers, when the agent found one (multi-node). */
  glooHostname: string | undefined;
  private workers: WorkerProcess[] = [];
  /** Each worker's heartbeat file, by local rank. */
  private heartbeats: string[] = [];
  private placement: Placement | null = null;
  private heartbeatDir: string | undefined;

  /** `extraEnv` is added to every worker's environment (AgentHooks.workerEnv). */
  constructor(
    private readonly cfg: LaunchConfig,
    private readonly extraEnv: Record<string, string> = {},
  ) {}

  /** Starts the local workers of one attempt or round. */
  start(p: Placement): void {
    const { cfg } = this;
    this.placement = p;
    const args = [
      ...(isTypeScript(cfg.script) ? ['--import', cfg.loader ?? typeScriptLoader(cfg.script)] : []),
      '--import',
      guardImportUrl(),
      cfg.script,
      ...cfg.scriptArgs,
    ];
    this.workers = [];
    this.heartbeats = [];
    for (let local = 0; local < cfg.nprocPerNode; local++) {
      const rank = p.rankBase + local;
      this.heartbeats.push(this.heartbeatFile(p.attempt, rank));
      this.workers.push(
        new WorkerProcess({
          rank,
          localRank: local,
          command: process.execPath,
          args,
          env: this.workerEnv(p, rank, local),
          console: cfg.consoleStreams[local],
          files: cfg.fileStreams[local],
          logDir: cfg.logDir && join(cfg.logDir, cfg.runId, `attempt_${p.attempt}`, `rank_${rank}`),
        }),
      );
    }
  }

  /** torchrun's worker environment, and tsddp's own variables. */
  private workerEnv(p: Placement, rank: number, local: number): NodeJS.ProcessEnv {
    const { cfg } = this;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      RANK: String(rank),
      LOCAL_RANK: String(local),
      WORLD_SIZE: String(p.worldSize),
      LOCAL_WORLD_SIZE: String(cfg.nprocPerNode),
      GROUP_RANK: String(p.nodeRank),
      GROUP_WORLD_SIZE: String(p.nnodes),
      ROLE_NAME: 'default',
      ROLE_RANK: String(rank),
      ROLE_WORLD_SIZE: String(p.worldSize),
      MASTER_ADDR: p.masterAddr,
      MASTER_PORT: String(p.masterPort),
      TORCHELASTIC_RESTART_COUNT: String(p.attempt),
      TORCHELASTIC_MAX_RESTARTS: String(cfg.maxRestarts),
      TORCHELASTIC_RUN_ID: cfg.runId,
      TORCHELASTIC_USE_AGENT_STORE: 'True',
      TSDDP_USE_AGENT_STORE: '1',
      [LAUNCHER_PID_ENV]: String(process.pid),
      [HEARTBEAT_FILE_ENV]: this.heartbeats[local],
    };
    if (p.elastic) env[ELASTIC_ENV] = '1';
    Object.assign(env, this.extraEnv);
    if (cfg.ompNumThreads !== undefined) env.OMP_NUM_THREADS = String(cfg.ompNumThreads);
    // Workers write to pipes; tell them the console is a terminal, so that a progress
    // line is redrawn in place (StreamSink passes it through).
    if (process.stdout.isTTY) env.TSDDP_TTY = '1';
    if (this.glooHostname) env.TSDDP_GLOO_HOSTNAME = this.glooHostname;
    return env;
  }

  /** Where the worker of `rank` writes its heartbeat in `attempt` (heartbeat.ts). */
  private heartbeatFile(attempt: number, rank: number): string {
    this.heartbeatDir ??= mkdtempSync(join(tmpdir(), 'tsrun-heartbeat-'));
    return join(this.heartbeatDir, `attempt${attempt}-rank${rank}`);
  }

  /**
   * Waits for the first event that ends the round: a worker's exit (all of them: success),
   * a stall, what `poll` (every --monitor-interval) reports from the rendezvous, or `stop`.
   */
  monitor(poll: () => Promise<RendezvousEvent | null>, stop: AbortSignal): Promise<RoundEnd> {
    return new Promise<RoundEnd>((resolve) => {
      const timers: NodeJS.Timeout[] = [];
      let done = false;
      const finish = (end: RoundEnd) => {
        if (done) return;
        done = true;
        for (const t of timers) clearInterval(t);
        stop.removeEventListener('abort', onStop);
        resolve(end);
      };
      // The agent aborts with the signal it received.
      const onStop = () => finish({ kind: 'signal', signal: stop.reason as NodeJS.Signals });
      if (stop.aborted) return onStop();
      stop.addEventListener('abort', onStop);
      this.watchExits(finish);
      timers.push(this.watchHeartbeats(finish), this.pollRendezvous(poll, finish));
    });
  }

  private watchExits(finish: (end: RoundEnd) => void): void {
    let running = this.workers.length;
    for (const worker of this.workers) {
      void worker.exited.then((exit) => {
        if (!isSuccess(exit)) finish({ kind: 'failed', worker, exit });
        else if (--running === 0) finish({ kind: 'succeeded' });
      });
    }
  }

  /** Ranks that stopped making steps (heartbeat.ts): a warning, or with --watchdog the end of the round. */
  private watchHeartbeats(finish: (end: RoundEnd) => void): NodeJS.Timeout {
    const { watchdogMs } = this.cfg;
    const watch = new StallWatch(
      this.workers.map((w, local) => ({ rank: w.rank, pid: w.pid ?? 0, file: this.heartbeats[local] })),
    );
    const stallMs = watchdogMs > 0 ? watchdogMs : STALL_WARNING_MS;
    // A rank waiting in a collective is most likely held up by a peer: it gets a grace
    // period, so the culprit's node reports first (heartbeat.ts).
    const limit = (s: Stall) => watchdogMs + (waitsForPeers(s) ? COLLECTIVE_GRACE_MS : 0);
    return setInterval(() => {
      const stalls = watch.stalled(Math.min(stallMs, STALL_WARNING_MS));
      if (watchdogMs > 0 && stalls.some((s) => s.secs * 1000 >= limit(s))) {
        // Every stalled rank, with what it was doing; the likely culprits first.
        const over = likelyCulpritsFirst(stalls.filter((s) => s.secs * 1000 >= watchdogMs));
        const worker = this.workers.find((w) => w.rank === over[0].rank) as WorkerProcess;
        finish({ kind: 'stalled', worker, report: over.map((s) => describeStall(s, hostname())).join('; ') });
        return;
      }
      for (const s of stalls) {
        if (!watch.firstReport(s.rank)) continue;
        const hint = watchdogMs > 0 ? '' : ' (--watchdog SECONDS stops such an attempt)';
        log(`warning: ${describeStall(s, hostname())}${hint}`);
      }
    }, WATCHDOG_POLL_MS);
  }

  /** One poll at a time; a store call that throws means the rendezvous store is lost. */
  private pollRendezvous(
    poll: () => Promise<RendezvousEvent | null>,
    finish: (end: RoundEnd) => void,
  ): NodeJS.Timeout {
    let busy = false;
    return setInterval(() => {
      if (busy) return;
      busy = true;
      poll()
        .then((event) => event && finish(event))
        .catch((e: unknown) =>
          finish({ kind: 'storeLost', error: e instanceof Error ? e.message.split('\n')[0] : String(e) }),
        )
        .finally(() => {
          busy = false;
        });
    }, this.cfg.monitorIntervalMs);
  }

  /** The launcher's report of a local failure; its stderr tail is complete once it closed. */
  async describe(f: LocalFailure): Promise<string> {
    if (f.kind === 'stalled') return `${f.report} (--watchdog ${this.cfg.watchdogMs / 1000} s)`;
    await f.worker.closed;
    const { worker } = f;
    const lines = [
      `rank ${worker.rank} (local rank ${worker.localRank} on node ${this.placement?.nodeRank} at ${hostname()}, pid ${worker.pid}) ${describeExit(f.exit)}`,
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
  async stop(signal: NodeJS.Signals): Promise<void> {
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

  /** At once, without waiting: a second signal, or the launcher's own exit. */
  kill(): void {
    for (const w of this.workers) w.signalGroup('SIGKILL');
  }

  /** The heartbeat files, once no worker writes them any more. */
  removeHeartbeats(): void {
    if (this.heartbeatDir) rmSync(this.heartbeatDir, { recursive: true, force: true });
  }
}

// Kill-to-resumed-training time: a launcher with --max-restarts 1 starts 2 workers that
// train a small ResNet-18 with DDP (Gloo) and checkpoint after every step; rank 1 SIGKILLs
// itself right after step KILL_AT (its checkpoint written), the launcher stops the other
// worker and starts the gang again, and the new workers resume from the last checkpoint.
// The time is from the kill to the end of the first step after the resume (both ranks'),
// from the workers' own wall-clock stamps. tsrun with tsddp workers (`train()`, the
// recipe behind `tsddp train`, with --checkpoint-every 1 and --resume auto) against
// torchrun with PyTorch workers (bench/reference/restart.py: the same model, batch and
// optimizer in a plain DDP loop, torch.save every step), and torchrun with tsddp workers;
// alternating, on this machine. Both launchers at their defaults (--monitor-interval 0.1 s,
// tsrun's --term-timeout 10 s, torchrun's 30 s: the surviving worker exits at SIGTERM);
// PyTorch's workers with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, without which they cannot
// rejoin after the restart (see below).
//
//   node --import tsx bench/restart.ts [--rounds 5] [--python PATH]
//
// Run with `--worker JOB.json` (by the launchers) it is the tsddp worker.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { probeTorchPython, REPO_ROOT } from '../src/benchmark/reference.ts';
import { fmt, markdownTable, median } from '../src/benchmark/stats.ts';
import { describeMachine, machineInfo } from '../src/host/machine.ts';

const STEPS = 8;
const KILL_AT = 3;
const KILL_RANK = 1;
const WORLD = 2;
const BATCH = 4;
const IMAGE = 16;
const WIDTH = 0.125;

interface Job {
  checkpointDir: string;
  steps: number;
  killAtStep: number;
  killRank: number;
  batchSize: number;
  imageSize: number;
  widthMultiplier: number;
}

interface BenchEvent {
  restartBench: 'start' | 'step' | 'kill';
  rank: number;
  attempt: number;
  step: number | null;
  /** Wall clock, seconds since the epoch. */
  t: number;
}

const wallClock = () => (performance.timeOrigin + performance.now()) / 1000;

/** When this process was started (exec'd), wall clock, from /proc (10 ms resolution); as restart.py. */
function processStart(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const ticks = Number(
    stat
      .slice(stat.lastIndexOf(')') + 1)
      .trim()
      .split(/\s+/)[19],
  );
  const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return wallClock() - (uptime - ticks / 100); // USER_HZ: 100 on Linux
}

/** The tsddp worker: what bench/reference/restart.py does, through train(). */
async function worker(jobFile: string): Promise<void> {
  const started = processStart();
  const rank = Number(process.env.RANK ?? 0);
  const attempt = Number(process.env.TORCHELASTIC_RESTART_COUNT ?? 0);
  const event = (restartBench: BenchEvent['restartBench'], step: number | null, t = wallClock()) =>
    console.log(JSON.stringify({ restartBench, rank, attempt, step, t }));
  event('start', null, started);
  const job = JSON.parse(readFileSync(jobFile, 'utf8')) as Job;
  const { train } = await import('../src/train/index.ts');
  await train(
    {
      model: 'resnet18',
      dataset: 'fake',
      widthMultiplier: job.widthMultiplier,
      imageSize: job.imageSize,
      numClasses: 10,
      trainSize: job.steps * job.batchSize * WORLD,
      valSize: 8,
      augment: false,
      batchSize: job.batchSize,
      lr: 0.1,
      epochs: 1,
      workers: 0,
      evalEvery: 0,
      checkpointDir: job.checkpointDir,
      checkpointEvery: 1,
      resume: 'auto',
    },
    {
      progress: false,
      onStep: ({ step }) => {
        event('step', step);
        if (attempt === 0 && rank === job.killRank && step === job.killAtStep) {
          event('kill', step);
          process.kill(process.pid, 'SIGKILL');
        }
      },
    },
  );
}

if (process.argv[2] === '--worker') {
  await worker(process.argv[3]);
} else {
  main();
}

interface Run {
  /** Kill to the end of the first step after the resume on every rank. */
  resumed: number;
  /** Kill to the exec of the last of the new worker processes (the launcher's part). */
  respawned: number;
}

function once(cmd: string[], env: NodeJS.ProcessEnv, dir: string): Run {
  const ck = mkdtempSync(join(dir, 'ck-'));
  const jobFile = join(ck, 'job.json');
  const job: Job = {
    checkpointDir: join(ck, 'checkpoints'),
    steps: STEPS,
    killAtStep: KILL_AT,
    killRank: KILL_RANK,
    batchSize: BATCH,
    imageSize: IMAGE,
    widthMultiplier: WIDTH,
  };
  writeFileSync(jobFile, JSON.stringify(job));
  const r = spawnSync(cmd[0], [...cmd.slice(1), jobFile], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, OMP_NUM_THREADS: '1', ...env },
    maxBuffer: 64 << 20,
    timeout: 300_000,
  });
  rmSync(ck, { recursive: true, force: true });
  const out = `${r.stdout}\n${r.stderr}`;
  if (r.status !== 0) throw new Error(`${cmd.join(' ')} failed (exit ${r.status}):\n${out.slice(-4000)}`);
  const events: BenchEvent[] = [];
  // Anywhere in a line: tsrun prefixes `[rank N] `, and torchrun's workers share its stdout.
  for (const m of out.matchAll(/\{"restartBench"[^{}]*\}/g)) events.push(JSON.parse(m[0]) as BenchEvent);
  const kill = events.find((e) => e.restartBench === 'kill');
  const after = events.filter((e) => e.attempt === 1);
  const firstSteps = [0, 1].map((rank) => after.find((e) => e.rank === rank && e.restartBench === 'step'));
  const starts = after.filter((e) => e.restartBench === 'start');
  if (kill === undefined || starts.length !== WORLD || firstSteps.some((e) => e?.step !== KILL_AT + 1)) {
    throw new Error(`${cmd.join(' ')}: no kill at step ${KILL_AT} and resume at ${KILL_AT + 1}:\n${out}`);
  }
  return {
    resumed: Math.max(...firstSteps.map((e) => (e as BenchEvent).t)) - kill.t,
    respawned: Math.max(...starts.map((e) => e.t)) - kill.t,
  };
}

function main(): void {
  const { values: opts } = parseArgs({
    options: { rounds: { type: 'string', default: '5' }, python: { type: 'string' } },
  });
  const rounds = Number(opts.rounds);
  const torch = probeTorchPython(opts.python);
  if (torch === null)
    throw new Error('bench/restart.ts needs a Python with torch (npm run setup, or --python)');

  const self = join(REPO_ROOT, 'bench/restart.ts');
  const restart = ['--standalone', '--nproc-per-node', String(WORLD), '--max-restarts', '1'];
  const torchrun = [torch.python, '-m', 'torch.distributed.run', ...restart];
  const sides: [string, string[], NodeJS.ProcessEnv][] = [
    [
      'tsrun + tsddp workers',
      [process.execPath, join(REPO_ROOT, 'bin/tsrun.mjs'), ...restart, self, '--worker'],
      {},
    ],
    // Without TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 the restarted PyTorch workers read the
    // dead gang's Gloo addresses from the agent's store (the same keys in every attempt)
    // and fail in init_process_group: pytorch/pytorch#135712.
    [
      'torchrun + PyTorch workers',
      [...torchrun, join(REPO_ROOT, 'bench/reference/restart.py')],
      { TORCH_DISABLE_SHARE_RDZV_TCP_STORE: '1' },
    ],
    [
      'torchrun + tsddp workers',
      [...torchrun, '--no-python', process.execPath, '--import', 'tsx', self, '--worker'],
      {},
    ],
  ];

  const dir = mkdtempSync(join(tmpdir(), 'tsddp-bench-restart-'));
  const runs = sides.map((): Run[] => []);
  try {
    for (let round = 0; round < rounds; round++) {
      // Alternate the order, so a busy moment of this shared machine hits every side.
      const order = round % 2 === 0 ? [0, 1, 2] : [2, 1, 0];
      for (const i of order) {
        const r = once(sides[i][1], sides[i][2], dir);
        runs[i].push(r);
        console.error(
          `round ${round + 1}, ${sides[i][0]}: ${fmt(r.resumed)} s (respawn ${fmt(r.respawned)} s)`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const resumed = runs.map((rs) => rs.map((r) => r.resumed));
  const base = median(resumed[1]);
  console.log(
    `${describeMachine(machineInfo(), { load: true })}; torch ${torch.torchVersion}; ${rounds} rounds; ` +
      `ResNet-18 x${WIDTH} ${IMAGE}x${IMAGE}, batch ${BATCH}, ${WORLD} workers, Gloo; ` +
      `rank ${KILL_RANK} SIGKILLed after step ${KILL_AT} of ${STEPS}\n`,
  );
  console.log(
    markdownTable(
      [
        'launcher + workers',
        'kill → resumed step, median s',
        'min s',
        'max s',
        'kill → new workers exec’d',
        'exec → resumed step',
        'vs torchrun + PyTorch',
      ],
      sides.map(([name], i) => [
        name,
        fmt(median(resumed[i])),
        fmt(Math.min(...resumed[i])),
        fmt(Math.max(...resumed[i])),
        fmt(median(runs[i].map((r) => r.respawned))),
        fmt(median(runs[i].map((r) => r.resumed - r.respawned))),
        `${fmt(median(resumed[i]) / base)}x`,
      ]),
    ),
  );
}

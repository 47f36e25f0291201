// Elastic training with tsrun (`--nnodes MIN:MAX --rdzv-backend c10d`): a node added, a
// node killed, a worker hung, a node cut off the network. Each node is a network
// namespace with its own address (loopback launchers where the machine does not permit
// namespaces; the network-loss case needs them). The workers (workers/elastic-steps.ts)
// all-reduce each step and resume from the step rank 0 last recorded.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { LaunchConfigError, resolveLaunchConfig } from '../src/launch/options.ts';
import { createNetNodes, type NetNodes } from './helpers/netns.ts';
import { freePort, jsonLines, Launcher, waitGone, worker } from './workers/launch-harness.ts';

const net = createNetNodes(3, 233);
const nodes: NetNodes | null = typeof net === 'string' ? null : net;
after(() => nodes?.remove());
const where = nodes ? 'network namespaces' : `loopback (${net})`;

interface Line {
  rank: number;
  world: number;
  round: number;
  resumedFrom?: number;
  done?: number;
}

/** A job of elastic launchers: node i runs in namespace i (or on loopback). */
class Job {
  readonly dir = mkdtempSync(join(tmpdir(), 'tsddp-elastic-'));
  readonly launchers: Launcher[] = [];
  constructor(
    private readonly flags: string[],
    private readonly workerArgs: string[],
    private readonly port: number,
    private readonly script = 'elastic-steps.ts',
  ) {}

  private endpoint(): string {
    return `${nodes ? nodes.addr[0] : '127.0.0.1'}:${this.port}`;
  }

  start(i: number): Launcher {
    const l = new Launcher(
      [
        ...this.flags,
        '--rdzv-backend',
        'c10d',
        '--rdzv-endpoint',
        this.endpoint(),
        '--rdzv-id',
        'elastic-test',
        '--term-timeout',
        '2',
        worker(this.script),
        ...(this.script === 'elastic-steps.ts' ? ['--dir', this.dir] : []),
        ...this.workerArgs,
      ],
      nodes ? { prefix: nodes.prefix(i) } : {},
    );
    this.launchers[i] = l;
    return l;
  }

  progress(): number {
    try {
      return (JSON.parse(readFileSync(join(this.dir, 'progress.json'), 'utf8')) as { step: number }).step;
    } catch {
      return 0;
    }
  }

  async untilStep(step: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.progress() < step) {
      if (Date.now() > deadline) throw new Error(`no step ${step} within ${timeoutMs} ms:\n${this.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  output(): string {
    return this.launchers.map((l, i) => `--- node ${i}\n${l.output}`).join('\n');
  }

  lines(i: number): Line[] {
    return jsonLines<Line>(this.launchers[i].stdout);
  }

  async cleanup(): Promise<void> {
    for (const l of this.launchers) l.kill();
    for (const l of this.launchers) assert.deepEqual(await waitGone(l.marker, 5000), [], 'processes left');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const FAST = ['--rdzv-conf', 'last_call_timeout=1,keep_alive_interval=0.5,keep_alive_max_attempt=3'];

test('options: --nnodes MIN:MAX with c10d, torchrun’s names, and clear errors', () => {
  const script = worker('elastic-steps.ts');
  const cfg = resolveLaunchConfig(script, [], {
    nnodes: '2:4',
    rdzvBackend: 'c10d',
    rdzvEndpoint: 'head.example:29410',
    rdzvId: 'job7',
    rdzvConf: 'last_call_timeout=2.5,join_timeout=60',
  });
  assert.deepEqual(cfg.elastic, {
    minNodes: 2,
    maxNodes: 4,
    host: 'head.example',
    port: 29410,
    lastCallMs: 2500,
    keepAliveMs: 5000,
    keepAliveMaxMissed: 3,
  });
  assert.equal(cfg.runId, 'job7');
  assert.equal(cfg.rdzvTimeoutMs, 60_000);
  // torchrun's default c10d port; PET_* variables (PyTorchJob) are honoured too.
  const env = { PET_NNODES: '1:3', PET_RDZV_BACKEND: 'c10d', PET_RDZV_ENDPOINT: 'head' };
  assert.equal(resolveLaunchConfig(script, [], {}, env).elastic?.port, 29400);
  const bad: [Record<string, string>, RegExp][] = [
    [{ nnodes: '1:3' }, /a node range is elastic; give --rdzv-backend c10d/],
    [{ nnodes: '3:2', rdzvBackend: 'c10d', rdzvEndpoint: 'h' }, /MIN must not exceed MAX/],
    [{ rdzvBackend: 'c10d' }, /needs --rdzv-endpoint HOST\[:PORT\]/],
    [{ rdzvBackend: 'etcd' }, /'static' or 'c10d'/],
    [{ rdzvBackend: 'c10d', rdzvEndpoint: 'h', rdzvConf: 'timeout=3' }, /unknown key 'timeout'/],
    [{ rdzvBackend: 'c10d', rdzvEndpoint: 'h', rdzvConf: 'last_call_timeout=-1' }, /positive number/],
    [{ rdzvBackend: 'c10d', rdzvEndpoint: 'h:99999' }, /--rdzv-endpoint \(port\)/],
    [{ runId: 'a', rdzvId: 'b' }, /name the same thing/],
  ];
  for (const [raw, re] of bad)
    assert.throws(() => resolveLaunchConfig(script, [], raw), re, JSON.stringify(raw));
  assert.throws(() => resolveLaunchConfig(script, [], { rdzvBackend: 'c10d' }), LaunchConfigError);
});

test(`a node that arrives joins the next round; training continues with 3 ranks (${where})`, async () => {
  const job = new Job(['--nnodes', '1:3', ...FAST], ['--steps', '40'], await freePort());
  try {
    job.start(0);
    await new Promise((r) => setTimeout(r, 300));
    job.start(1);
    await job.untilStep(5);
    job.start(2);
    const exits = await Promise.all(job.launchers.map((l) => l.exit(90_000)));
    for (const e of exits) assert.equal(e.code, 0, job.output());
    assert.match(job.launchers[0].stderr, /round 0 ends: a new node is waiting to join/);
    const first = job.lines(0)[0];
    assert.equal(first.world, 2, job.output());
    for (let i = 0; i < 3; i++) {
      const last = job.lines(i).at(-1) as Line;
      assert.deepEqual([last.world, last.done], [3, 40], job.output());
    }
    // The new node resumed where rank 0 had recorded, not from 0.
    const resumed = job.lines(2)[0].resumedFrom as number;
    assert.ok(resumed >= 5, `node 2 resumed from ${resumed}`);
    assert.equal(job.progress(), 40);
  } finally {
    await job.cleanup();
  }
});

test(`a killed node: the survivors re-rendezvous and finish with 2 ranks, from the last step (${where})`, async () => {
  const job = new Job(
    ['--nnodes', '2:3', '--max-restarts', '2', ...FAST],
    ['--steps', '40'],
    await freePort(),
  );
  try {
    job.start(0);
    await new Promise((r) => setTimeout(r, 300));
    job.start(1);
    job.start(2);
    await job.untilStep(6);
    assert.equal(job.lines(0)[0].world, 3, job.output());
    const before = job.progress();
    job.launchers[2].kill(); // the launcher and its workers, as a machine that dies
    const exits = await Promise.all([0, 1].map((i) => job.launchers[i].exit(90_000)));
    for (const e of exits) assert.equal(e.code, 0, job.output());
    for (const i of [0, 1]) {
      const lines = job.lines(i);
      const resumed = lines.find((l) => l.round > 0 && l.resumedFrom !== undefined) as Line;
      assert.equal(resumed.world, 2, job.output());
      // No step lost: the new round starts at or after the step recorded before the kill.
      assert.ok((resumed.resumedFrom as number) >= before, `resumed from ${resumed.resumedFrom} < ${before}`);
      assert.deepEqual((lines.at(-1) as Line).done, 40);
    }
    assert.equal(job.progress(), 40);
  } finally {
    await job.cleanup();
  }
});

test(`a hung worker is found by its heartbeat, reported by rank and host, and the round restarts (${where})`, async () => {
  const job = new Job(
    ['--nnodes', '2:2', '--max-restarts', '1', '--watchdog', '3', ...FAST],
    ['--steps', '15', '--step-ms', '50', '--hang-rank', '1', '--hang-at', '4'],
    await freePort(),
  );
  try {
    job.start(0);
    await new Promise((r) => setTimeout(r, 300));
    job.start(1);
    const exits = await Promise.all(job.launchers.map((l) => l.exit(90_000)));
    for (const e of exits) assert.equal(e.code, 0, job.output());
    // The node of rank 1 names it, its pid, its host and what it was doing.
    assert.match(
      job.output(),
      /round 0 failed: rank 1 \(pid \d+ on \S+, [a-z ]+\) has made no step for \d s: last step 4, then step/,
    );
    // Rank 0, waiting for rank 1 in the all-reduce, is not blamed: its grace outlasts the report.
    assert.doesNotMatch(job.output(), /round 0 failed: rank 0/);
    for (const i of [0, 1]) assert.equal((job.lines(i).at(-1) as Line).done, 15);
    assert.equal(job.progress(), 15);
  } finally {
    await job.cleanup();
  }
});

test('a node cut off the network is found by its missing keep-alives; the others go on', {
  skip: nodes ? undefined : `needs network namespaces: ${net}`,
}, async () => {
  const job = new Job(
    ['--nnodes', '2:3', '--max-restarts', '2', ...FAST],
    ['--steps', '40'],
    await freePort(),
  );
  try {
    job.start(0);
    await new Promise((r) => setTimeout(r, 300));
    job.start(1);
    job.start(2);
    await job.untilStep(6);
    const before = job.progress();
    nodes?.unplug(2);
    const exits = await Promise.all([0, 1].map((i) => job.launchers[i].exit(90_000)));
    for (const e of exits) assert.equal(e.code, 0, job.output());
    assert.match(job.output(), /sent no keep-alive for 1\.5 s: it is lost|a node failed/);
    for (const i of [0, 1]) {
      const resumed = job.lines(i).find((l) => l.round > 0 && l.resumedFrom !== undefined) as Line;
      assert.equal(resumed.world, 2, job.output());
      assert.ok((resumed.resumedFrom as number) >= before);
    }
    // The unplugged node loses the store and stops its workers.
    const cut = await job.launchers[2].exit(60_000);
    assert.notEqual(cut.code, 0, job.output());
  } finally {
    await job.cleanup();
  }
});

test(`tsddp training under elastic tsrun: a lost node, and the survivor re-shards the epoch from the last checkpoint (${where})`, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsddp-elastic-train-'));
  const ckpt = join(dir, 'ckpt');
  const jobFile = join(dir, 'job.json');
  writeFileSync(
    jobFile,
    JSON.stringify({
      model: 'tiny',
      result: join(dir, 'result'),
      config: {
        dataset: 'shapes',
        imageSize: 16,
        trainSize: 96,
        valSize: 8,
        batchSize: 4,
        epochs: 2,
        lr: 0.05,
        workers: 0,
        evalEvery: 0,
        checkpointDir: ckpt,
        checkpointEvery: 1,
      },
    }),
  );
  const job = new Job(
    ['--nnodes', '1:2', '--max-restarts', '2', ...FAST],
    [jobFile],
    await freePort(),
    'train-worker.ts',
  );
  const steps = () => (existsSync(ckpt) ? readdirSync(ckpt).filter((d) => /^ckpt-\d+$/.test(d)) : []);
  try {
    job.start(0);
    await new Promise((r) => setTimeout(r, 300));
    job.start(1);
    await job.launchers[0].waitFor(/round 0: node \d of 2/, 30_000);
    const deadline = Date.now() + 60_000;
    while (steps().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    job.launchers[1].kill();
    const exit = await job.launchers[0].exit(120_000);
    assert.equal(exit.code, 0, job.output());
    // 2 ranks: 12 steps an epoch; alone: 24. The survivor continued the interrupted epoch.
    const m =
      /world size 2 -> 1: epoch 1 goes on at sample (\d+) of its order, re-sharded \((\d+) steps left in it\)/.exec(
        job.output(),
      );
    assert.ok(m, job.output());
    const [sample, left] = [Number(m[1]), Number(m[2])];
    assert.equal(sample % 8, 0);
    assert.equal(left, (96 - sample) / 4);
    const res = JSON.parse(readFileSync(join(dir, 'result.rank0'), 'utf8')) as {
      startStep: number;
      steps: number;
      worldSize: number;
    };
    assert.equal(res.worldSize, 1);
    assert.equal(res.startStep, sample / 8);
    assert.equal(res.steps, res.startStep + left + 24);
    assert.ok(existsSync(join(ckpt, `ckpt-${String(res.steps).padStart(6, '0')}`)));
  } finally {
    await job.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});

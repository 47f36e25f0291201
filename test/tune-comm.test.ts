// --tune-comm (src/train/tune-comm.ts, setup.ts): the choice rule (speed first, a lossy hook
// only after its accuracy check, the default kept within the noise margin), when the trial
// is due (always, or across nodes only: what --tune sets), and the trial on real ranks:
// two workers as torchrun starts them on two machines (LOCAL_WORLD_SIZE 1), which time the
// link and every hook, agree on one choice and train with it; and, where this machine can
// make network namespaces (root), the same two workers on two emulated machines joined by a
// 100 Mbit/s link, where the trial must leave plain all-reduce for a compressing hook.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { NetnsError, Network, netnsUnavailable, parseRate } from '../bench/lib/netns.ts';
import { freePort } from '../src/host/gang.ts';
import { planRun } from '../src/train/plan.ts';
import { commTrialDue } from '../src/train/setup.ts';
import {
  type CommCandidate,
  type CommMeasurement,
  chooseComm,
  describeCandidate,
} from '../src/train/tune-comm.ts';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-tune-comm-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const m = (commHook: CommCandidate['commHook'], msPerStep: number, extra: Partial<CommCandidate> = {}) =>
  ({ commHook, bucketCapMb: 25, msPerStep, ...extra }) as CommMeasurement;
const PLAIN: CommCandidate = { commHook: 'none', bucketCapMb: 25 };

test('the choice: the fastest that passes its accuracy check; lossy hooks asked fastest first', async () => {
  const measured = [
    m('none', 1000),
    m('fp16', 520),
    m('bf16', 510),
    m('powerSGD', 200, { powersgdRank: 1 }),
    m('powerSGD', 260, { powersgdRank: 2 }),
  ];
  const asked: string[] = [];
  const refusePowerSgd = async (c: CommCandidate) => {
    asked.push(`${c.commHook}${c.powersgdRank ?? ''}`);
    return c.commHook !== 'powerSGD';
  };
  assert.deepEqual(await chooseComm(measured, PLAIN, refusePowerSgd), { commHook: 'bf16', bucketCapMb: 25 });
  assert.deepEqual(asked, ['powerSGD1', 'powerSGD2', 'bf16']);
  assert.deepEqual(await chooseComm(measured, PLAIN, async () => true), {
    commHook: 'powerSGD',
    bucketCapMb: 25,
    powersgdRank: 1,
  });
  // Every lossy hook refused: plain all-reduce stays.
  assert.deepEqual(await chooseComm(measured, PLAIN, async () => false), PLAIN);
});

test('the choice: within 2% of the default is noise, and a lossless setting needs no accuracy check', async () => {
  const never = async () => assert.fail('a lossless candidate is not checked');
  assert.deepEqual(
    await chooseComm([m('none', 1000), m('none', 985, { bucketCapMb: 50 })], PLAIN, never),
    PLAIN,
  );
  assert.deepEqual(await chooseComm([m('none', 1000), m('none', 900, { bucketCapMb: 50 })], PLAIN, never), {
    commHook: 'none',
    bucketCapMb: 50,
  });
  // No measurement of the default: nothing to compare with, the default stays.
  assert.deepEqual(await chooseComm([m('fp16', 10)], PLAIN, async () => true), PLAIN);
});

test('when the trial runs: --tune-comm on with several ranks; nodes (what --tune sets) only across machines', () => {
  const plan = (tuneComm: 'off' | 'nodes' | 'on') => planRun({ model: 'resnet18', tuneComm });
  const env = (local: number) => ({ LOCAL_WORLD_SIZE: String(local) });
  assert.equal(commTrialDue(plan('off'), 4, env(1)), false);
  assert.equal(commTrialDue(plan('on'), 2, env(2)), true);
  assert.equal(commTrialDue(plan('on'), 1, env(1)), false, 'one rank: no all-reduce');
  assert.equal(commTrialDue(plan('nodes'), 2, env(1)), true, 'two machines, one rank each');
  assert.equal(commTrialDue(plan('nodes'), 4, env(2)), true);
  assert.equal(commTrialDue(plan('nodes'), 2, env(2)), false, 'one machine: the bucket trial covered it');
});

const FLAGS = [
  ...['--model', 'resnet18', '--width-multiplier', '0.25', '--image-size', '16'],
  ...['--train-size', '64', '--val-size', '8', '--batch-size', '4', '--workers', '0'],
  ...['--epochs', '1', '--max-steps', '3', '--lr', '0.05'],
];

interface Ran {
  status: number | null;
  out: string;
}

/** Two workers as torchrun starts them on two machines: RANK 0 and 1, one local rank each. */
async function twoNodes(
  args: string[],
  where?: { wrap: (rank: number) => string[]; addr: string },
): Promise<Ran[]> {
  const port = await freePort();
  const procs: ChildProcess[] = [0, 1].map((rank) => {
    const cmd = [...(where?.wrap(rank) ?? []), process.execPath, 'bin/tsddp.mjs', 'train', ...args];
    return spawn(cmd[0], cmd.slice(1), {
      env: {
        ...process.env,
        OMP_NUM_THREADS: '1',
        RANK: String(rank),
        LOCAL_RANK: '0',
        WORLD_SIZE: '2',
        LOCAL_WORLD_SIZE: '1',
        GROUP_RANK: String(rank),
        MASTER_ADDR: where?.addr ?? '127.0.0.1',
        MASTER_PORT: String(port),
        ...(where ? { GLOO_SOCKET_IFNAME: 'eth0' } : {}),
      },
    });
  });
  return Promise.all(
    procs.map(
      (p) =>
        new Promise<Ran>((resolve) => {
          let out = '';
          p.stdout?.on('data', (d) => (out += d));
          p.stderr?.on('data', (d) => (out += d));
          const timer = setTimeout(() => p.kill('SIGKILL'), 240_000);
          p.on('close', (status) => {
            clearTimeout(timer);
            resolve({ status, out });
          });
        }),
    ),
  );
}

/** The choice rank 0 printed, and what its start line says it trains with (rank 1 prints neither). */
function choiceOf(out: string): { choice: string; trains: string } {
  const choice = /tune: comm choice: ([^(]+) \(/.exec(out);
  assert.ok(choice, out);
  const line = /DDP buckets (\d+) MiB(, comm hook (\w+)( rank (\d))?)?/.exec(out);
  assert.ok(line, out);
  return { choice: choice[1].trim(), trains: `${line[3] ?? 'none'}${line[5] ?? ''}@${line[1]}` };
}

/** What describeCandidate printed, as choiceOf's short form. */
function short(described: string): string {
  const mb = /(\d+) MiB buckets/.exec(described)?.[1];
  const p = /PowerSGD rank (\d)/.exec(described);
  const hook = p ? `powerSGD${p[1]}` : (/^(fp16|bf16)/.exec(described)?.[1] ?? 'none');
  return `${hook}@${mb}`;
}

test('--tune-comm nodes on two machines (LOCAL_WORLD_SIZE 1): the link and every hook timed, one choice trained with', async () => {
  const ran = await twoNodes([...FLAGS, '--tune-comm', 'nodes', '--checkpoint-dir', join(tmp, 'loopback')]);
  for (const r of ran) assert.equal(r.status, 0, r.out);
  const out = ran[0].out;
  assert.match(
    out,
    /tune: comm link: an all-reduce of the gradients \([\d.]+ MB\) takes [\d.]+ ms: [\d.]+ Gbit\/s bus bandwidth over 2 ranks/,
  );
  const steps = /tune: comm steps: (.*)/.exec(out)?.[1] ?? '';
  for (const hook of [
    'plain all-reduce, 25 MiB',
    'fp16 compression, 25 MiB',
    'bf16 compression, 25 MiB',
    'PowerSGD rank 1, 25 MiB',
    'PowerSGD rank 2, 25 MiB',
    'PowerSGD rank 4, 25 MiB',
  ])
    assert.ok(steps.includes(hook), `${hook} timed: ${steps}`);
  assert.equal(
    (steps.match(/ MiB buckets [\d.]+ ms/g) ?? []).length,
    9,
    'six hooks and three more bucket sizes',
  );
  assert.doesNotMatch(ran[1].out, /tune: comm choice/, 'rank 0 says it');
  // Both ranks chose from the same (slowest rank's) numbers, and checked that they agree.
  const { choice, trains } = choiceOf(out);
  assert.equal(trains, short(choice), 'the run trains with the choice');
  const kept = JSON.parse(readFileSync(join(tmp, 'loopback', 'tune-comm.json'), 'utf8'));
  assert.equal(short(describeCandidate(kept.choice)), short(choice));
  assert.equal(kept.measured.length, 9);

  // Again from its checkpoint (as an elastic restart or a resume starts): the kept choice, no new trial.
  const again = await twoNodes([
    ...FLAGS,
    '--tune-comm',
    'nodes',
    '--checkpoint-dir',
    join(tmp, 'loopback'),
    '--max-steps',
    '5',
    '--resume',
    'auto',
  ]);
  for (const r of again) assert.equal(r.status, 0, r.out);
  assert.doesNotMatch(again[0].out, /comm trial:/);
  assert.match(again[0].out, /tune: comm choice: .*, kept in .*tune-comm\.json/);
  assert.equal(choiceOf(again[0].out).trains, short(choice));
});

test('--tune-comm on with a --comm-hook the run names: the hook is kept, only the bucket size is timed', async () => {
  const ran = await twoNodes([
    ...FLAGS,
    '--tune-comm',
    'on',
    '--comm-hook',
    'fp16',
    '--checkpoint-dir',
    join(tmp, 'given'),
  ]);
  for (const r of ran) assert.equal(r.status, 0, r.out);
  const steps = /tune: comm steps: (.*)/.exec(ran[0].out)?.[1] ?? '';
  const timed = steps.split('; ').map((x) => x.replace(/ [\d.]+ ms$/, ''));
  assert.deepEqual(
    timed.sort(),
    ['5', '25', '50', '100'].map((mb) => `fp16 compression, ${mb} MiB buckets`).sort(),
  );
  assert.match(ran[0].out, /comm hook: fp16, as given/);
  assert.match(choiceOf(ran[0].out).trains, /^fp16@\d+$/);
});

test('--tune-comm off (the default) on two machines: no trial', async () => {
  const ran = await twoNodes([...FLAGS, '--checkpoint-dir', join(tmp, 'off')]);
  for (const r of ran) assert.equal(r.status, 0, r.out);
  for (const r of ran) assert.doesNotMatch(r.out, /tune: comm/);
  assert.match(ran[0].out, /DDP buckets 25 MiB\n/, 'plain all-reduce at the default buckets');
});

test('bad input: an unknown --tune-comm value is refused by name; a corrupt tune-comm.json stops every rank naming the file', async () => {
  assert.throws(
    () => planRun({ model: 'resnet18', tuneComm: 'sometimes' as never }),
    (e: Error) => e.name === 'ConfigError' && /tuneComm/.test(e.message) && /off, nodes, on/.test(e.message),
  );
  const dir = join(tmp, 'corrupt');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tune-comm.json'), '{"version": 1, "choice": {"commHook": "zip"');
  const ran = await twoNodes([...FLAGS, '--tune-comm', 'on', '--checkpoint-dir', dir]);
  for (const r of ran) {
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /TuneError: .*tune-comm\.json cannot be read: .*delete it to choose again/);
  }
  // The file is the user's to delete: it is still there.
  assert.ok(existsSync(join(dir, 'tune-comm.json')));
});

test('bad input: a link rate bench:network cannot use is a NetnsError naming it', () => {
  assert.equal(parseRate('1gbit'), 1e9);
  assert.equal(parseRate('100Mbit'), 1e8);
  for (const bad of ['1 gigabit', '10gbps', '', '-1gbit'])
    assert.throws(
      () => parseRate(bad),
      (e: Error) => e instanceof NetnsError && e.message.includes(`'${bad}'`),
    );
});

const noNetns = netnsUnavailable();
test('two emulated machines on a 100 Mbit/s link: the trial measures the link and leaves plain all-reduce', {
  skip: noNetns ?? false,
}, async () => {
  const net = await Network.create(2);
  try {
    await net.setRate('100mbit');
    const ran = await twoNodes([...FLAGS, '--tune-comm', 'nodes', '--checkpoint-dir', join(tmp, 'netns')], {
      wrap: (rank) => net.wrap(rank),
      addr: net.nodes[0].addr,
    });
    for (const r of ran) assert.equal(r.status, 0, r.out);
    const gbit = Number(/([\d.]+) Gbit\/s bus bandwidth/.exec(ran[0].out)?.[1]);
    assert.ok(
      gbit > 0.01 && gbit < 0.15,
      `the measured bandwidth is the 0.1 Gbit/s cap's (its bucket lets a burst through at once): ${gbit}`,
    );
    const { choice, trains } = choiceOf(ran[0].out);
    assert.notEqual(
      short(choice).split('@')[0],
      'none',
      `a compressing hook wins on a slow link: ${ran[0].out}`,
    );
    assert.equal(trains, short(choice));
  } finally {
    await net.destroy();
  }
});

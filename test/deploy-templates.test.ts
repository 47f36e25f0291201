// The cluster templates in deploy/ are run, not only read: each one's launch command is
// taken from the template and run once per node with the environment that system gives
// its pods or tasks (Kubernetes' JOB_COMPLETION_INDEX, Kubeflow's PET_* and RANK/WORLD_SIZE,
// SLURM's SLURM_NNODES/SLURM_NODEID), on this machine: node 0's DNS name becomes
// 127.0.0.1, a GPU count becomes one CPU worker, `npx tsrun` this checkout's bin/tsrun.mjs,
// and the training script test/workers/launch-env.ts, which reports its environment and
// an all-reduce over the job. Two nodes must form one world of ranks 0 and 1.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
// @ts-expect-error: a plain ES module of the install scripts, without declarations
import { DEFAULT_TORCH_VERSION } from '../scripts/lib/torch.mjs';
import { REPO_ROOT } from '../src/benchmark/reference.ts';
import { freePort } from '../src/host/gang.ts';
import { resolveLaunchConfig } from '../src/launch/options.ts';
import { runCommand } from './helpers/run.ts';

const TSRUN = [process.execPath, join(REPO_ROOT, 'bin/tsrun.mjs')];
const SCRIPT = join(REPO_ROOT, 'test/workers/launch-env.ts');

interface Report {
  env: Record<string, string>;
  sum: number;
}

/** Runs `nodeCommand(r)` for nodes 0 and 1 at once; checks they form one world of 2 ranks. */
async function twoNodes(nodeCommand: (node: number) => { cmd: string[]; env: NodeJS.ProcessEnv }) {
  const runs = await Promise.all(
    [0, 1].map((r) => {
      const { cmd, env } = nodeCommand(r);
      return runCommand(cmd, { env, cwd: REPO_ROOT, timeoutMs: 90_000 });
    }),
  );
  for (const [r, run] of runs.entries()) {
    assert.equal(run.code, 0, `node ${r}:\n${run.out}`);
    // tsrun prefixes its workers' lines with [rank N].
    const reports = run.out
      .split('\n')
      .map((l) => l.replace(/^\[rank \d+\] /, ''))
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Report);
    assert.equal(reports.length, 1, `node ${r} runs one worker:\n${run.out}`);
    const [{ env, sum }] = reports;
    assert.equal(env.RANK, String(r));
    assert.equal(env.GROUP_RANK, String(r));
    assert.equal(env.WORLD_SIZE, '2');
    assert.equal(env.MASTER_ADDR, '127.0.0.1');
    assert.equal(sum, 3, 'the all-reduce spans both nodes');
  }
}

/** The container of a Kubernetes manifest's pod template. */
interface Container {
  command: string[];
  args?: string[];
  env?: { name: string; value: string }[];
}

function manifests(file: string): Record<string, unknown>[] {
  return parseAllDocuments(readFileSync(join(REPO_ROOT, 'deploy', file), 'utf8')).map(
    (d) => d.toJS() as Record<string, unknown>,
  );
}

/** The command line with `npx tsrun` and `train.mjs` swapped for this checkout's. */
function localCommand(argv: string[]): string[] {
  const i = argv.indexOf('tsrun');
  assert.deepEqual(argv.slice(0, i + 1), ['npx', 'tsrun'], 'the template runs npx tsrun');
  return [...TSRUN, ...argv.slice(i + 1).map((a) => (a === 'train.mjs' ? SCRIPT : a))];
}

test('deploy/kubernetes/indexed-job.yaml: an Indexed Job and a headless Service form one world', async () => {
  const docs = manifests('kubernetes/indexed-job.yaml');
  const service = docs.find((d) => d.kind === 'Service') as { spec: { clusterIP: string } };
  assert.equal(service.spec.clusterIP, 'None', 'a headless Service names the pods');
  const job = docs.find((d) => d.kind === 'Job') as {
    spec: { completionMode: string; completions: number; template: { spec: { containers: Container[] } } };
  };
  assert.equal(job.spec.completionMode, 'Indexed');
  assert.equal(job.spec.completions, 2);
  const [container] = job.spec.template.spec.containers;
  const podEnv = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
  const port = String(await freePort());
  await twoNodes((index) => {
    // What the pod sees: its own env, Kubernetes' JOB_COMPLETION_INDEX; DNS for train-0.train.
    const env: Record<string, string> = {
      ...podEnv,
      NPROC_PER_NODE: '1',
      MASTER_ADDR: '127.0.0.1',
      JOB_COMPLETION_INDEX: String(index),
    };
    // Kubernetes expands $(VAR) in args from the container's environment.
    const args = (container.args ?? []).map((a) =>
      a
        .replace(/\$\((\w+)\)/g, (_, v: string) => env[v] ?? '')
        .replace('--master-port=29500', `--master-port=${port}`),
    );
    return { cmd: localCommand([...container.command, ...args]), env };
  });
});

test('deploy/kubernetes/pytorchjob.yaml: the PyTorchJob operator’s PET_* variables are tsrun’s flags', async () => {
  const [job] = manifests('kubernetes/pytorchjob.yaml') as {
    kind: string;
    spec: { pytorchReplicaSpecs: Record<string, { template: { spec: { containers: Container[] } } }> };
  }[];
  assert.equal(job.kind, 'PyTorchJob');
  const specs = job.spec.pytorchReplicaSpecs;
  const port = String(await freePort());
  await twoNodes((node) => {
    const [container] = specs[node === 0 ? 'Master' : 'Worker'].template.spec.containers;
    // What Kubeflow's training operator sets in each pod (node-level RANK/WORLD_SIZE too).
    const env = {
      PET_NNODES: '2',
      PET_NODE_RANK: String(node),
      PET_NPROC_PER_NODE: '1',
      PET_MASTER_ADDR: '127.0.0.1',
      PET_MASTER_PORT: port,
      MASTER_ADDR: '127.0.0.1',
      MASTER_PORT: port,
      WORLD_SIZE: '2',
      RANK: String(node),
    };
    return { cmd: localCommand(container.command), env };
  });
});

test('deploy/slurm/node.sh: SLURM’s SLURM_NNODES and SLURM_NODEID make one world', async () => {
  const sbatch = readFileSync(join(REPO_ROOT, 'deploy/slurm/train.sbatch'), 'utf8');
  assert.match(sbatch, /srun .*deploy\/slurm\/node\.sh" "\$@"/, 'train.sbatch runs node.sh on every node');
  const port = String(await freePort());
  await twoNodes((node) => ({
    cmd: ['bash', join(REPO_ROOT, 'deploy/slurm/node.sh'), SCRIPT],
    // What srun gives each task, plus what train.sbatch exports.
    env: {
      SLURM_NNODES: '2',
      SLURM_NODEID: String(node),
      SLURM_JOB_NODELIST: 'node[0-1]',
      MASTER_ADDR: '127.0.0.1',
      MASTER_PORT: port,
      NPROC_PER_NODE: '1',
      TSRUN: TSRUN.join(' '),
    },
  }));
});

test('tsrun takes torchrun’s PET_* variables for the flags not given; a given flag wins', () => {
  const env = {
    PET_NNODES: '3',
    PET_NODE_RANK: '2',
    PET_MASTER_ADDR: 'node0',
    PET_MASTER_PORT: '29555',
    PET_STANDALONE: '',
  };
  const cfg = resolveLaunchConfig(SCRIPT, [], { nodeRank: '1' }, env);
  assert.deepEqual(
    [cfg.nnodes, cfg.nodeRank, cfg.masterAddr, cfg.masterPort, cfg.standalone],
    [3, 1, 'node0', 29555, false],
  );
  assert.throws(() => resolveLaunchConfig(SCRIPT, [], {}, { PET_NNODES: 'x' }), /--nnodes/);
});

test('the container image installs the default torch and no build tools, and the templates run it', () => {
  const dockerfile = readFileSync(join(REPO_ROOT, 'deploy/docker/Dockerfile'), 'utf8');
  const code = dockerfile.replace(/^#.*\n/gm, '');
  // The torch it installs is the one the prebuilt addons are made for (scripts/prebuild.mjs),
  // from the CPU index, so the install step needs no compiler.
  assert.match(code, new RegExp(`^ARG TORCH_VERSION=${DEFAULT_TORCH_VERSION.replaceAll('.', '\\.')}$`, 'm'));
  assert.match(code, /^ARG TORCH_INDEX=https:\/\/download\.pytorch\.org\/whl\/cpu$/m);
  // Every package any apt-get install names, and no build tool anywhere in the file.
  const apt = [...code.matchAll(/apt-get install ([^\n&\\]+)/g)].flatMap(([, args]) =>
    args.split(/\s+/).filter((w) => w !== '' && !w.startsWith('-')),
  );
  assert.deepEqual(apt, ['python3', 'python3-venv']);
  assert.doesNotMatch(code, /(^|\s)(g\+\+|gcc|c\+\+|cmake|make|build-essential|\S+-dev)(\s|$)/m);
  // The install step finds that torch through $VIRTUAL_ENV (scripts/lib/torch.mjs).
  const venv = /python3 -m venv (\S+)/.exec(code)?.[1];
  assert.match(code, new RegExp(`^ENV VIRTUAL_ENV=${venv}$`, 'm'));
  assert.match(code, /npm ci .*--foreground-scripts/);
  for (const t of ['indexed-job.yaml', 'pytorchjob.yaml'])
    assert.match(readFileSync(join(REPO_ROOT, 'deploy/kubernetes', t), 'utf8'), /deploy\/docker\/Dockerfile/);
});

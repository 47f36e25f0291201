// `tsddp run` (alias `tsrun`): the torchrun-compatible launcher's command line. Everything
// after the script path goes to the script untouched.
import { Command, Option } from 'commander';
import { LaunchConfigError, type RawLaunchOptions, resolveLaunchConfig } from '../launch/options.ts';

// [flag, value placeholder (or null for a switch), help]
const FLAGS: [string, string | null, string][] = [
  [
    'nproc-per-node',
    '<n>',
    "workers on this node: a number, 'cpu' (one per core), 'gpu' or 'auto' (default 1)",
  ],
  [
    'nnodes',
    '<n>',
    'number of nodes: a fixed count, or MIN:MAX for elastic training (with --rdzv-backend c10d) (default 1)',
  ],
  ['node-rank', '<r>', "this node's rank, 0..nnodes-1 (default 0; c10d assigns it)"],
  [
    'master-addr',
    '<addr>',
    'address of node 0, where its launcher serves the rendezvous store (default 127.0.0.1)',
  ],
  [
    'master-port',
    '<port>',
    'port of the rendezvous store; 0 picks a free port (single node) (default 29500)',
  ],
  ['standalone', null, 'single node, rendezvous on loopback at a free port, a random run id'],
  ['max-restarts', '<n>', 'restarts of the whole worker gang after a failure (default 0)'],
  ['monitor-interval', '<s>', 'seconds between checks for other nodes’ failures (default 0.1)'],
  ['log-dir', '<dir>', 'write per-rank logs to <dir>/<run-id>/attempt_<k>/rank_<r>/{stdout,stderr}.log'],
  [
    'tee',
    '<sel>',
    'streams written to log files and the console: 0 none, 1 stdout, 2 stderr, 3 both, or "0:1,1:2" per local rank',
  ],
  ['redirects', '<sel>', 'streams written to log files only (not the console); same format as --tee'],
  ['run-id', '<id>', "job id shared by all nodes (default 'none'; random with --standalone)"],
  [
    'rdzv-backend',
    '<name>',
    "'static' (node 0 at --master-addr, fixed --nnodes) or 'c10d' (elastic: nodes may leave and join) (default static)",
  ],
  ['rdzv-endpoint', '<host[:port]>', 'c10d: where the rendezvous store is served (default port 29400)'],
  ['rdzv-id', '<id>', 'the job id (same as --run-id, torchrun’s name for it)'],
  [
    'rdzv-conf',
    '<k=v,...>',
    'rendezvous settings; c10d (seconds): join_timeout (600), last_call_timeout (30), keep_alive_interval (5), keep_alive_max_attempt (3); static: timeout (as --rdzv-timeout), rank (as --node-rank); other keys are refused',
  ],
  ['rdzv-timeout', '<s>', 'seconds to wait for all nodes to join (and to finish) (default 600)'],
  ['term-timeout', '<s>', 'seconds between SIGTERM and SIGKILL when stopping workers (default 10)'],
  [
    'watchdog',
    '<s>',
    'fail (and restart, within --max-restarts) an attempt in which a rank made no step for <s> seconds; tsddp programs report their steps (default: off, a warning after 60 s)',
  ],
  [
    'dashboard',
    '[port]',
    'serve a live dashboard on 127.0.0.1:<port> while the job runs (no port, or 0: a free one)',
  ],
];

const camel = (flag: string) => flag.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());

// Flags that take the next argument as their value (both spellings).
const VALUE_FLAGS = new Set(
  FLAGS.filter(([, v]) => v?.startsWith('<')).flatMap(([f]) => [`--${f}`, `--${f.replaceAll('-', '_')}`]),
);

/**
 * commander gives an optional value to `--dashboard` whatever follows it; a bare
 * `--dashboard` must not take the script (`tsrun --dashboard train.ts`) as its port.
 */
function bareDashboard(argv: string[]): string[] {
  const out = [...argv];
  for (let i = 0; i < out.length; i++) {
    const a = out[i];
    if (!a.startsWith('-') || a === '--') break; // the script: the rest is its own
    if (a === '--dashboard') {
      if (/^\d+$/.test(out[i + 1] ?? '')) i++;
      else out[i] = '--dashboard=0';
    } else if (VALUE_FLAGS.has(a)) i++;
  }
  return out;
}

/** Builds the command; `name` is 'run' under `tsddp`, 'tsrun' as its own program. */
export function runCommand(name = 'run'): Command {
  const cmd = new Command(name)
    .description('launch a TypeScript or JavaScript training script on N worker processes (like torchrun)')
    .usage('[options] <script> [script args...]')
    .argument('<script>', 'the entry file (.ts runs through tsx, .js/.mjs with plain node)')
    .argument('[args...]', 'arguments passed to the script')
    .passThroughOptions()
    .action(runAction);
  const parseOptions = cmd.parseOptions.bind(cmd);
  cmd.parseOptions = (argv) => parseOptions(bareDashboard(argv));
  for (const [flag, value, help] of FLAGS) {
    cmd.option(`--${flag}${value ? ` ${value}` : ''}`, help);
    // torchrun also accepts underscores (--nproc_per_node).
    if (flag.includes('-'))
      cmd.addOption(new Option(`--${flag.replaceAll('-', '_')}${value ? ` ${value}` : ''}`).hideHelp());
  }
  return cmd;
}

/** Adds `run` to the `tsddp` program (its options must stop at the subcommand). */
export function registerRunCommand(program: Command): void {
  program.enablePositionalOptions();
  program.addCommand(runCommand());
}

function rawOptions(
  opts: Record<string, string | boolean | undefined>,
): RawLaunchOptions & { dashboard?: string | boolean } {
  const raw: Record<string, string | boolean | undefined> = {};
  for (const [flag] of FLAGS) {
    raw[camel(flag)] = opts[camel(flag)] ?? opts[flag.replaceAll('-', '_')];
  }
  return raw as RawLaunchOptions;
}

async function runAction(
  script: string,
  args: string[],
  opts: Record<string, string | boolean | undefined>,
): Promise<void> {
  // libtorch (the store, CUDA's device count) loads here, not for `--help`. Its store
  // client logs a warning with a C++ stack when a peer's socket closes; the launcher
  // reports lost peers itself, so its own libtorch logs errors only. libtorch reads the
  // level when it loads; the workers inherit the user's setting.
  const userLevel = process.env.TORCH_CPP_LOG_LEVEL;
  process.env.TORCH_CPP_LOG_LEVEL = 'ERROR';
  const [{ cuda }, { launchJob }] = await Promise.all([
    import('../core/runtime.ts'),
    import('./launch-job.ts'),
  ]);
  if (userLevel === undefined) delete process.env.TORCH_CPP_LOG_LEVEL;
  else process.env.TORCH_CPP_LOG_LEVEL = userLevel;
  let cfg: ReturnType<typeof resolveLaunchConfig>;
  try {
    cfg = resolveLaunchConfig(script, args, rawOptions(opts), process.env, () => cuda.deviceCount());
  } catch (e) {
    if (!(e instanceof LaunchConfigError)) throw e;
    process.stderr.write(`tsrun: error: ${e.message}\n`);
    process.exit(2);
  }
  process.exit(await launchJob(cfg));
}

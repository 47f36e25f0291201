// The launcher's configuration: torchrun's flags, parsed from their raw (string) form and
// validated with errors that say what to change.
import { randomUUID } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TsddpError } from '../errors/index.ts';

/** A bad flag or flag combination; the CLI prints the message and exits non-zero. */
export class LaunchConfigError extends TsddpError {
  override name = 'LaunchConfigError';
  readonly code = 'LAUNCH_CONFIG';
}

/** Which of a worker's streams a setting applies to (torchrun's 0 none, 1 stdout, 2 stderr, 3 both). */
export interface StdStreams {
  stdout: boolean;
  stderr: boolean;
}

export interface LaunchConfig {
  /** Absolute path of the entry file. */
  script: string;
  /** The `node --import` that runs a TypeScript entry (tsx's loader URL); none for JavaScript. */
  loader?: string;
  scriptArgs: string[];
  nprocPerNode: number;
  nnodes: number;
  nodeRank: number;
  masterAddr: string;
  /** 0 picks a free port (single node only). */
  masterPort: number;
  standalone: boolean;
  maxRestarts: number;
  monitorIntervalMs: number;
  /** Per-rank log files go under `<logDir>/<runId>/attempt_<k>/rank_<RANK>/`. */
  logDir?: string;
  /** Per local rank: streams written to the log files. */
  fileStreams: StdStreams[];
  /** Per local rank: streams shown on the console (with a `[rank N]` prefix). */
  consoleStreams: StdStreams[];
  runId: string;
  /** How long launchers wait for each other (join and exit barriers). */
  rdzvTimeoutMs: number;
  /** Grace period between SIGTERM and SIGKILL when stopping workers. */
  termTimeoutMs: number;
  /** A rank without a new step for this long fails the attempt (0: only warn, after a minute). */
  watchdogMs: number;
  /** OMP_NUM_THREADS for workers, or undefined when the user's environment sets it. */
  ompNumThreads?: number;
  /** Elastic (c10d) rendezvous, as torchrun's `--rdzv-backend c10d`; absent: static. */
  elastic?: ElasticSettings;
  /** --dashboard: serve the live dashboard on 127.0.0.1:port (0: a free port). */
  dashboard?: {
    port: number;
    /** The workers' metrics file; by default the launcher picks one (TSDDP_METRICS_FILE). */
    metricsFile?: string;
  };
}

/**
 * torchrun's c10d rendezvous: between `minNodes` and `maxNodes` launchers meet at
 * `endpoint`, node ranks are assigned per round, and a lost or new node starts a new round
 * (elastic.ts). `--nnodes`/`--node-rank`/`--master-*` do not apply.
 */
export interface ElasticSettings {
  minNodes: number;
  maxNodes: number;
  host: string;
  port: number;
  /** After `minNodes` have joined, how long a round stays open for more (last_call_timeout). */
  lastCallMs: number;
  /** How often a launcher tells the others it is alive (keep_alive_interval). */
  keepAliveMs: number;
  /** Missed keep-alives after which a node counts as lost (keep_alive_max_attempt). */
  keepAliveMaxMissed: number;
}

/** The flags as commander hands them over (all optional strings/booleans). */
export interface RawLaunchOptions {
  nprocPerNode?: string;
  nnodes?: string;
  nodeRank?: string;
  masterAddr?: string;
  masterPort?: string;
  standalone?: boolean;
  maxRestarts?: string;
  monitorInterval?: string;
  logDir?: string;
  tee?: string;
  redirects?: string;
  runId?: string;
  rdzvTimeout?: string;
  termTimeout?: string;
  watchdog?: string;
  rdzvBackend?: string;
  rdzvEndpoint?: string;
  rdzvId?: string;
  rdzvConf?: string;
}

export const DEFAULT_MASTER_PORT = 29500;
const TS_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.tsx']);

export function isTypeScript(script: string): boolean {
  return TS_EXTENSIONS.has(extname(script));
}

/**
 * tsx's loader for a TypeScript entry: the user's own tsx (resolved from the script's
 * folder, as Node would resolve its imports) first, else one installed beside tsddp. tsx
 * is an optional peer dependency: JavaScript entries run on plain node.
 */
export function typeScriptLoader(script: string): string {
  try {
    return pathToFileURL(createRequire(script).resolve('tsx')).href;
  } catch {}
  try {
    return import.meta.resolve('tsx');
  } catch {
    throw new LaunchConfigError(
      `${script} is TypeScript, which runs through tsx, and tsx is not installed: ` +
        'run `npm install --save-dev tsx` in your project, or launch the compiled .js file',
    );
  }
}

function int(flag: string, raw: string | undefined, fallback: number, min: number, max?: number): number {
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(v) || v < min || (max !== undefined && v > max)) {
    const range = max === undefined ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`;
    throw new LaunchConfigError(`${flag} must be ${range}, got '${raw}'`);
  }
  return v;
}

function seconds(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback * 1000;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || v <= 0)
    throw new LaunchConfigError(`${flag} must be a positive number of seconds, got '${raw}'`);
  return Math.round(v * 1000);
}

function nprocPerNode(raw: string | undefined, cudaDevices: () => number): number {
  if (raw === undefined) return 1;
  if (raw === 'cpu') return availableParallelism();
  if (raw === 'gpu' || raw === 'auto') {
    const n = cudaDevices();
    if (n > 0) return n;
    if (raw === 'gpu') throw new LaunchConfigError('--nproc-per-node gpu: no CUDA device is available');
    return availableParallelism();
  }
  return int('--nproc-per-node', raw, 1, 1);
}

/** --nnodes: N, or MIN:MAX (elastic; torchrun's form). */
function nnodesRange(raw: string | undefined): { min: number; max: number } {
  if (raw === undefined) return { min: 1, max: 1 };
  const m = /^([^:]*):([^:]*)$/.exec(raw.trim());
  if (!m) {
    const n = int('--nnodes', raw, 1, 1);
    return { min: n, max: n };
  }
  const min = int('--nnodes (MIN of MIN:MAX)', m[1], 1, 1);
  const max = int('--nnodes (MAX of MIN:MAX)', m[2], 1, 1);
  if (min > max) throw new LaunchConfigError(`--nnodes ${raw}: MIN must not exceed MAX`);
  return { min, max };
}

/** torchrun's c10d rendezvous port when --rdzv-endpoint names none. */
export const DEFAULT_RDZV_PORT = 29400;

// torchrun's --rdzv-conf keys of the c10d backend that tsrun honours (seconds), with
// torchrun's defaults.
const RDZV_CONF_DEFAULTS = {
  join_timeout: 600,
  last_call_timeout: 30,
  keep_alive_interval: 5,
  keep_alive_max_attempt: 3,
} as const;

// The keys torchrun's static backend reads (static_tcp_rendezvous.py): timeout, its
// store's timeout in seconds (how long nodes wait for each other: tsrun's --rdzv-timeout),
// and rank, which torchrun sets from --node-rank itself.
const STATIC_RDZV_CONF_KEYS = ['timeout', 'rank'] as const;

/** `key=value,...` as [key, value] pairs (value undefined without '='); empty parts are skipped. */
function confPairs(raw: string | undefined): [string, string | undefined][] {
  return (raw ?? '')
    .split(',')
    .filter((part) => part.trim() !== '')
    .map((part) => {
      const [key, value] = part.split('=').map((x) => x.trim());
      return [key, value];
    });
}

/** A positive number (an integer when `whole`) for `--rdzv-conf key`, or a LaunchConfigError. */
function confNumber(key: string, value: string | undefined, whole: boolean): number {
  const v = Number(value);
  if (value === undefined || value === '' || !Number.isFinite(v) || v <= 0 || (whole && !Number.isInteger(v)))
    throw new LaunchConfigError(
      `--rdzv-conf ${key} must be a positive ${whole ? 'integer' : 'number of seconds'}, got '${value ?? ''}'`,
    );
  return v;
}

/** `--rdzv-conf key=value,...` for c10d: unknown keys are refused by name. */
function rdzvConf(raw: string | undefined): Record<keyof typeof RDZV_CONF_DEFAULTS, number> {
  const out: Record<string, number> = { ...RDZV_CONF_DEFAULTS };
  for (const [key, value] of confPairs(raw)) {
    if (!(key in RDZV_CONF_DEFAULTS))
      throw new LaunchConfigError(
        `--rdzv-conf: unknown key '${key}' for --rdzv-backend c10d (it takes ${Object.keys(RDZV_CONF_DEFAULTS).join(', ')})`,
      );
    out[key] = confNumber(key, value, key === 'keep_alive_max_attempt');
  }
  return out as Record<keyof typeof RDZV_CONF_DEFAULTS, number>;
}

/**
 * `--rdzv-conf` for the static backend: torchrun's keys, checked against the flags that
 * say the same (--rdzv-timeout, --node-rank). A key the static backend does not read is
 * refused by name, as with c10d, rather than ignored. Returns the timeout, if given.
 */
function staticRdzvConf(
  raw: string | undefined,
  nodeRank: number,
  rdzvTimeout: string | undefined,
): number | undefined {
  const takes = STATIC_RDZV_CONF_KEYS.join(', ');
  let timeoutS: number | undefined;
  for (const [key, value] of confPairs(raw)) {
    if (key in RDZV_CONF_DEFAULTS)
      throw new LaunchConfigError(
        `--rdzv-conf: ${key} is a key of --rdzv-backend c10d; --rdzv-backend static takes ${takes}`,
      );
    if (!(STATIC_RDZV_CONF_KEYS as readonly string[]).includes(key))
      throw new LaunchConfigError(
        `--rdzv-conf: unknown key '${key}' for --rdzv-backend static (it takes ${takes})`,
      );
    if (key === 'rank') {
      // torchrun overwrites it with --node-rank; a different one is a mistake, not a setting.
      if (value === undefined || value === '' || Number(value) !== nodeRank)
        throw new LaunchConfigError(
          `--rdzv-conf rank=${value ?? ''} disagrees with --node-rank ${nodeRank}: give the node's rank with --node-rank`,
        );
      continue;
    }
    timeoutS = confNumber(key, value, false);
    // An invalid --rdzv-timeout is reported as such, later.
    if (rdzvTimeout !== undefined && Number(rdzvTimeout) > 0 && Number(rdzvTimeout) !== timeoutS)
      throw new LaunchConfigError(
        `--rdzv-conf timeout=${value} and --rdzv-timeout ${rdzvTimeout} name the same thing: give one`,
      );
  }
  return timeoutS;
}

/** `--rdzv-backend c10d --rdzv-endpoint HOST[:PORT]` into ElasticSettings. */
function elasticSettings(
  raw: RawLaunchOptions,
  range: { min: number; max: number },
): { elastic: ElasticSettings; joinTimeoutMs: number } {
  const endpoint = (raw.rdzvEndpoint ?? '').trim();
  if (endpoint === '')
    throw new LaunchConfigError(
      '--rdzv-backend c10d needs --rdzv-endpoint HOST[:PORT]: where the rendezvous store is served (by the launcher on that host)',
    );
  // HOST, HOST:PORT, [v6]:PORT
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d*))?$/.exec(endpoint);
  if (!m) throw new LaunchConfigError(`--rdzv-endpoint must be HOST or HOST:PORT, got '${endpoint}'`);
  const port = m[3] === undefined ? DEFAULT_RDZV_PORT : int('--rdzv-endpoint (port)', m[3], 0, 1, 65535);
  const conf = rdzvConf(raw.rdzvConf);
  return {
    elastic: {
      minNodes: range.min,
      maxNodes: range.max,
      host: m[1] ?? m[2],
      port,
      lastCallMs: Math.round(conf.last_call_timeout * 1000),
      keepAliveMs: Math.round(conf.keep_alive_interval * 1000),
      keepAliveMaxMissed: conf.keep_alive_max_attempt,
    },
    joinTimeoutMs: Math.round(conf.join_timeout * 1000),
  };
}

/** torchrun's stream selector: "3" for every local rank, or "0:1,1:2" per local rank. */
export function parseStdSelector(flag: string, raw: string, nproc: number): StdStreams[] {
  const decode = (s: string): StdStreams => {
    if (!/^[0-3]$/.test(s))
      throw new LaunchConfigError(`${flag} takes 0 (none), 1 (stdout), 2 (stderr) or 3 (both), got '${s}'`);
    const v = Number(s);
    return { stdout: (v & 1) !== 0, stderr: (v & 2) !== 0 };
  };
  const trimmed = raw.trim();
  if (!trimmed.includes(':')) return Array.from({ length: nproc }, () => decode(trimmed));
  const out = Array.from({ length: nproc }, () => ({ stdout: false, stderr: false }));
  for (const part of trimmed.split(',')) {
    const [r, s] = part.split(':');
    const lr = int(`${flag} (local rank)`, r, 0, 0, nproc - 1);
    out[lr] = decode(s ?? '');
  }
  return out;
}

/**
 * Every launcher option and how it is given: text (the launcher validates it) or a
 * switch. `tsddp train` takes the same ones (cli/train-flags.ts).
 */
export const LAUNCH_OPTION_KINDS = {
  nprocPerNode: 'string',
  nnodes: 'string',
  nodeRank: 'string',
  masterAddr: 'string',
  masterPort: 'string',
  standalone: 'bool',
  maxRestarts: 'string',
  monitorInterval: 'string',
  logDir: 'string',
  tee: 'string',
  redirects: 'string',
  runId: 'string',
  rdzvTimeout: 'string',
  termTimeout: 'string',
  watchdog: 'string',
  rdzvBackend: 'string',
  rdzvEndpoint: 'string',
  rdzvId: 'string',
  rdzvConf: 'string',
} as const satisfies Record<keyof RawLaunchOptions, 'string' | 'bool'>;

/**
 * torchrun's defaults from the environment: each flag `--foo-bar` not given takes
 * `PET_FOO_BAR` (Kubeflow's PyTorchJob and TorchX set PET_NNODES, PET_NODE_RANK,
 * PET_NPROC_PER_NODE, PET_MASTER_ADDR, PET_MASTER_PORT, ...). A given flag wins.
 */
export function withEnvDefaults<R extends RawLaunchOptions>(raw: R, env: NodeJS.ProcessEnv): R {
  const out = { ...raw } as Record<string, unknown>;
  for (const [name, kind] of Object.entries(LAUNCH_OPTION_KINDS)) {
    if (out[name] !== undefined) continue;
    const value = env[`PET_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`];
    if (value === undefined || value === '') continue;
    out[name] = kind === 'bool' ? true : value;
  }
  return out as R;
}

/** Where the nodes meet: the static rendezvous's node 0, or the c10d endpoint. */
interface RendezvousSettings {
  nnodes: number;
  nodeRank: number;
  masterAddr: string;
  masterPort: number;
  elastic?: ElasticSettings;
  /** How long launchers wait for each other without --rdzv-timeout. */
  defaultTimeoutMs: number;
}

/** --rdzv-backend, checked against --nnodes and --standalone: the c10d settings, or undefined (static). */
function elasticBackend(
  raw: RawLaunchOptions,
  range: { min: number; max: number },
  standalone: boolean,
): ReturnType<typeof elasticSettings> | undefined {
  const backend = (raw.rdzvBackend ?? 'static').trim();
  if (backend !== 'static' && backend !== 'c10d')
    throw new LaunchConfigError(
      `--rdzv-backend must be 'static' or 'c10d' (torchrun's elastic backend), got '${backend}'`,
    );
  if (range.min !== range.max && backend !== 'c10d')
    throw new LaunchConfigError(
      `--nnodes ${raw.nnodes}: a node range is elastic; give --rdzv-backend c10d and --rdzv-endpoint HOST:PORT too`,
    );
  if (backend === 'c10d' && standalone)
    throw new LaunchConfigError('--standalone has its own rendezvous: drop --rdzv-backend c10d');
  return backend === 'c10d' ? elasticSettings(raw, range) : undefined;
}

/** The static rendezvous's node 0; --standalone is torchrun's "local rendezvous on a free port". */
function masterEndpoint(
  raw: RawLaunchOptions,
  standalone: boolean,
): { masterAddr: string; masterPort: number } {
  const masterAddr = standalone ? '127.0.0.1' : (raw.masterAddr ?? '127.0.0.1').trim();
  if (masterAddr === '') throw new LaunchConfigError('--master-addr must not be empty');
  const masterPort = standalone ? 0 : int('--master-port', raw.masterPort, DEFAULT_MASTER_PORT, 0, 65535);
  return { masterAddr, masterPort };
}

/** The rendezvous flags: the backend, the nodes, this node's rank and where they meet. */
function rendezvousSettings(raw: RawLaunchOptions, standalone: boolean): RendezvousSettings {
  const range = nnodesRange(raw.nnodes);
  const c10d = elasticBackend(raw, range, standalone);
  const nodes = range.max;
  if (standalone && nodes > 1)
    throw new LaunchConfigError(`--standalone runs a single node, but --nnodes is ${nodes}`);
  // With c10d the rendezvous assigns node ranks (torchrun ignores --node-rank there too).
  const nodeRank = c10d ? 0 : int('--node-rank', raw.nodeRank, 0, 0);
  if (nodeRank >= nodes)
    throw new LaunchConfigError(
      `--node-rank ${nodeRank} is out of range for --nnodes ${nodes} (node ranks are 0..${nodes - 1})`,
    );
  // The workers' MASTER_ADDR/MASTER_PORT under c10d: the store on the endpoint.
  if (c10d) {
    const { elastic } = c10d;
    const where = { masterAddr: elastic.host, masterPort: elastic.port };
    return { nnodes: nodes, nodeRank, ...where, elastic, defaultTimeoutMs: c10d.joinTimeoutMs };
  }
  const staticTimeoutS = staticRdzvConf(raw.rdzvConf, nodeRank, raw.rdzvTimeout);
  const { masterAddr, masterPort } = masterEndpoint(raw, standalone);
  if (masterPort === 0 && nodes > 1)
    throw new LaunchConfigError(
      '--master-port 0 (a free port) only works on one node: other nodes must know the port; give a fixed --master-port',
    );
  return {
    nnodes: nodes,
    nodeRank,
    masterAddr,
    masterPort,
    defaultTimeoutMs: (staticTimeoutS ?? 600) * 1000,
  };
}

/** --log-dir, --tee and --redirects: which of each local rank's streams go to files and to the console. */
function logStreams(
  raw: RawLaunchOptions,
  nproc: number,
): Pick<LaunchConfig, 'logDir' | 'fileStreams' | 'consoleStreams'> {
  const logDir = raw.logDir === undefined ? undefined : resolve(raw.logDir);
  const none = (): StdStreams[] => Array.from({ length: nproc }, () => ({ stdout: false, stderr: false }));
  const tee = raw.tee === undefined ? none() : parseStdSelector('--tee', raw.tee, nproc);
  const redirects =
    raw.redirects === undefined ? none() : parseStdSelector('--redirects', raw.redirects, nproc);
  if (!logDir && (raw.tee !== undefined || raw.redirects !== undefined))
    throw new LaunchConfigError('--tee and --redirects write log files: give --log-dir too');
  // With --log-dir and neither --tee nor --redirects, both streams go to files and console.
  const teeAll = logDir !== undefined && raw.tee === undefined && raw.redirects === undefined;
  const fileStreams = tee.map((t, i) =>
    teeAll
      ? { stdout: true, stderr: true }
      : { stdout: t.stdout || redirects[i].stdout, stderr: t.stderr || redirects[i].stderr },
  );
  const consoleStreams = redirects.map((r) => ({ stdout: !r.stdout, stderr: !r.stderr }));
  return { logDir, fileStreams, consoleStreams };
}

/** --run-id or torchrun's --rdzv-id (the same thing): random with --standalone, else 'none'. */
function runIdOf(raw: RawLaunchOptions, standalone: boolean): string {
  if (raw.runId !== undefined && raw.rdzvId !== undefined && raw.runId !== raw.rdzvId)
    throw new LaunchConfigError(
      `--run-id '${raw.runId}' and --rdzv-id '${raw.rdzvId}' name the same thing: give one`,
    );
  const runId = raw.rdzvId ?? raw.runId ?? (standalone ? randomUUID() : 'none');
  if (!/^[\w.-]+$/.test(runId))
    throw new LaunchConfigError(`--run-id may only hold letters, digits, '_', '-' and '.', got '${runId}'`);
  return runId;
}

/**
 * Validates raw flags into a LaunchConfig; flags not given default to torchrun's PET_*
 * environment variables. `cudaDevices` is only asked for 'gpu'/'auto'. Flags are checked
 * in a fixed order (the rendezvous, the logs, the run id, then the rest), so a command
 * with several mistakes is told of the same one first every time.
 */
export function resolveLaunchConfig(
  script: string,
  scriptArgs: string[],
  given: RawLaunchOptions & { dashboard?: string | boolean },
  env: NodeJS.ProcessEnv = process.env,
  cudaDevices: () => number = () => 0,
): LaunchConfig {
  const raw = withEnvDefaults(given, env);
  const path = resolve(script);
  if (!existsSync(path) || !statSync(path).isFile())
    throw new LaunchConfigError(`script not found: ${script} (resolved to ${path})`);
  const standalone = raw.standalone === true;
  const nproc = nprocPerNode(raw.nprocPerNode, cudaDevices);
  const { defaultTimeoutMs, elastic, ...meet } = rendezvousSettings(raw, standalone);
  const streams = logStreams(raw, nproc);
  const runId = runIdOf(raw, standalone);
  const ompSet = env.OMP_NUM_THREADS !== undefined && env.OMP_NUM_THREADS !== '';
  return {
    script: path,
    ...(isTypeScript(path) ? { loader: typeScriptLoader(path) } : {}),
    scriptArgs,
    nprocPerNode: nproc,
    ...meet,
    standalone,
    maxRestarts: int('--max-restarts', raw.maxRestarts, 0, 0),
    monitorIntervalMs: seconds('--monitor-interval', raw.monitorInterval, 0.1),
    ...streams,
    runId,
    rdzvTimeoutMs:
      raw.rdzvTimeout === undefined ? defaultTimeoutMs : seconds('--rdzv-timeout', raw.rdzvTimeout, 600),
    termTimeoutMs: seconds('--term-timeout', raw.termTimeout, 10),
    watchdogMs:
      raw.watchdog === undefined || raw.watchdog.trim() === '0' ? 0 : seconds('--watchdog', raw.watchdog, 0),
    // Cores divided among the local workers, so they do not oversubscribe the machine.
    ompNumThreads: ompSet ? undefined : Math.max(1, Math.floor(availableParallelism() / nproc)),
    // `--dashboard` alone: a free port.
    dashboard:
      raw.dashboard === undefined || raw.dashboard === false
        ? undefined
        : { port: raw.dashboard === true ? 0 : int('--dashboard', raw.dashboard, 0, 0, 65535) },
    ...(elastic ? { elastic } : {}),
  };
}

// `tsddp train` arguments: a JSON or YAML config file (--config) overlaid with flags, the
// kebab-case forms of the options (--batch-size 64, --amp bf16, --channels-last,
// --no-pin-memory, --lr=0.2), plus the launcher's own flags (--nproc-per-node,
// --max-restarts, ...). Everything is validated by the schema in config.ts.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { RawLaunchOptions } from '../launch/index.ts';
import {
  allowedOptionsLine,
  ConfigError,
  configProblems,
  failWith,
  flagOf,
  OPTIONS,
  type OptionKind,
  parseConfig,
  type TrainConfig,
  unknownOptionMessage,
} from './config.ts';

/**
 * The launcher's flags (torchrun's: --nproc-per-node, --max-restarts, ...), kept as the
 * text given: the launcher validates them (--nproc-per-node also takes cpu/gpu/auto).
 */
const LAUNCH_KINDS = {
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
} satisfies Record<keyof RawLaunchOptions, OptionKind>;
const LAUNCH_NAMES = Object.keys(LAUNCH_KINDS);

export interface TrainArgs {
  config: TrainConfig;
  /** Launcher flags given (as text); with nprocPerNode, `tsddp train` starts the workers. */
  launch: RawLaunchOptions;
  /** The arguments without the launcher's flags: what launched workers get. */
  workerArgv: string[];
  help: boolean;
  configFile?: string;
}

function camel(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function kindOf(name: string): OptionKind | undefined {
  return (
    (OPTIONS as Record<string, { kind: OptionKind }>)[name]?.kind ??
    (LAUNCH_KINDS as Record<string, OptionKind>)[name]
  );
}

/** A flag's text as the value the schema checks; text that is not a number stays text, so the message shows it. */
function coerce(kind: OptionKind, text: string): unknown {
  if (kind === 'int' || kind === 'number') {
    return /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(text.trim()) ? Number(text) : text;
  }
  if (kind === 'bool') {
    if (text === 'true' || text === '1' || text === 'yes') return true;
    if (text === 'false' || text === '0' || text === 'no') return false;
    return text;
  }
  return text;
}

function fileError(message: string): ConfigError {
  return new ConfigError(message, [message]);
}

/** Reads a config file: JSON (YAML would need a parser this installation does not include). */
export function readConfigFile(path: string): Record<string, unknown> {
  const yaml = ['.yaml', '.yml'].includes(extname(path).toLowerCase());
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw fileError(`config file ${path}: ${(e as Error).message}`);
  }
  let value: unknown;
  try {
    value = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (e) {
    throw fileError(`config file ${path} is not valid ${yaml ? 'YAML' : 'JSON'}: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw fileError(`config file ${path} must hold a ${yaml ? 'YAML mapping' : 'JSON object'} of options`);
  }
  // Keys may be camelCase (batchSize) or the flags' kebab-case (batch-size).
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), v]));
}

/** Moves the launcher's options out of a record of options (numbers become text). */
function takeLaunch(raw: Record<string, unknown>, problems: string[], source: string): RawLaunchOptions {
  const out: Record<string, string | boolean> = {};
  for (const name of LAUNCH_NAMES) {
    if (!(name in raw)) continue;
    const v = raw[name];
    delete raw[name];
    const isBool = LAUNCH_KINDS[name as keyof RawLaunchOptions] === 'bool';
    if (isBool ? typeof v === 'boolean' : typeof v === 'string' || typeof v === 'number') {
      out[name] = isBool ? (v as boolean) : String(v);
    } else {
      problems.push(
        `invalid value ${JSON.stringify(v)} for launcher option ${flagOf(name)} in ${source}; allowed: ${isBool ? 'true or false' : 'a number or text'}`,
      );
    }
  }
  return out as RawLaunchOptions;
}

/** Parses `tsddp train` arguments (without the `train` word). */
export function parseTrainArgs(argv: readonly string[]): TrainArgs {
  const fromFlags: Record<string, unknown> = {};
  const problems: string[] = [];
  let configFile: string | undefined;
  let help = false;
  let unknown = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      help = true;
      continue;
    }
    if (!arg.startsWith('--')) {
      problems.push(`unexpected argument '${arg}' (options are given as --name value)`);
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    let value: string | undefined = eq === -1 ? undefined : arg.slice(eq + 1);
    if (flag === 'config') {
      configFile = value ?? argv[++i];
      if (configFile === undefined) problems.push('option --config needs a file path');
      continue;
    }
    let name = camel(flag);
    let negated = false;
    if (kindOf(name) === undefined && flag.startsWith('no-') && kindOf(camel(flag.slice(3))) === 'bool') {
      name = camel(flag.slice(3));
      negated = true;
    }
    const kind = kindOf(name);
    if (kind === undefined || flag !== flag.toLowerCase()) {
      problems.push(unknownOptionMessage(camel(flag), true, LAUNCH_NAMES));
      unknown = true;
      if (value === undefined && i + 1 < argv.length && !argv[i + 1].startsWith('--')) i++;
      continue;
    }
    if (kind === 'bool') {
      if (negated) {
        if (value !== undefined) problems.push(`option --no-${flagOf(name).slice(2)} takes no value`);
        fromFlags[name] = false;
        continue;
      }
      if (value === undefined && /^(true|false)$/.test(argv[i + 1] ?? '')) value = argv[++i];
      fromFlags[name] = value === undefined ? true : coerce(kind, value);
      continue;
    }
    if (value === undefined) {
      value = argv[i + 1];
      if (value === undefined || (value.startsWith('--') && value.length > 2)) {
        const spec = (OPTIONS as Record<string, { allowed: string } | undefined>)[name];
        problems.push(`option ${flagOf(name)} needs a value${spec ? ` (${spec.allowed})` : ''}`);
        continue;
      }
      i++;
    }
    fromFlags[name] = coerce(kind, value);
  }
  const fromFile = configFile !== undefined ? readConfigFile(configFile) : {};
  const launch = {
    ...takeLaunch(fromFile, problems, 'the config file'),
    ...takeLaunch(fromFlags, problems, 'the flags'),
  };
  const input = { ...fromFile, ...fromFlags };
  const source = configFile !== undefined ? `options (config file ${configFile} and flags)` : 'options';
  if (help) return { config: parseConfig({}), launch, workerArgv: [], help, configFile };
  if (problems.length > 0) {
    // Report the flags' problems and the values' together.
    const all = [...problems, ...configProblems(input)];
    if (unknown && !all.some((p) => p.startsWith('allowed options:')))
      all.push(allowedOptionsLine(true, LAUNCH_NAMES));
    failWith(all, source);
  }
  const config = parseConfig(input, source);
  // What launched workers get: everything but the launcher's flags.
  const workerArgv: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const name = arg.startsWith('--') ? camel(arg.slice(2).split('=')[0]) : '';
    const kind = (LAUNCH_KINDS as Record<string, OptionKind>)[
      name.replace(/^no([A-Z])/, (_, c: string) => c.toLowerCase())
    ];
    if (kind === undefined) {
      workerArgv.push(arg);
      continue;
    }
    const takesNext =
      !arg.includes('=') && (kind !== 'bool' ? true : /^(true|false)$/.test(argv[i + 1] ?? ''));
    if (takesNext) i++;
  }
  return { config, launch, workerArgv, help, configFile };
}

/** --help text: every option, its flag, allowed values, default and meaning. */
export function trainHelp(): string {
  const lines = [
    'Usage: tsddp train [--config file.json|file.yaml] [options]',
    '',
    'The classic DDP ResNet recipe. Runs as one worker (alone, or under tsrun/torchrun), or',
    'launches --nproc-per-node workers itself. A JSON or YAML config file takes the same options',
    '(camelCase or kebab-case keys); flags override it. Boolean options: --name, --no-name, --name=false.',
    '',
    'Options:',
  ];
  for (const [name, spec] of Object.entries(OPTIONS)) {
    const def = (spec.schema as { def?: { defaultValue?: unknown } }).def?.defaultValue;
    const shown = def === undefined ? '' : ` [default: ${JSON.stringify(def)}]`;
    lines.push(`  ${flagOf(name).padEnd(26)} ${spec.help}; ${spec.allowed}${shown}`);
  }
  lines.push(
    '',
    'Launcher options: with --nproc-per-node, tsddp train starts the workers itself (as tsrun/torchrun;',
    `see tsddp run --help): ${LAUNCH_NAMES.map(flagOf).join(', ')}`,
  );
  return lines.join('\n');
}

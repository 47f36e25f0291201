// `tsddp train` arguments, parsed once by commander: a JSON or YAML config file (--config)
// overlaid with flags — the kebab-case forms of the options in train/config.ts
// (--batch-size 64, --amp bf16, --channels-last, --no-pin-memory, --lr=0.2) — plus the
// launcher's flags (--nproc-per-node, --max-restarts, ...). The options' schema
// (config.ts) validates the result and names every bad option at once, and plan.ts resolves
// it into the run plan. Workers started by `tsddp train --nproc-per-node` get that plan
// through PLAN_ENV, not the command line again.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { Command, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import { LAUNCH_OPTION_KINDS, type RawLaunchOptions } from '../launch/options.ts';
import {
  allowedOptionsLine,
  ConfigError,
  configProblems,
  failWith,
  flagOf,
  OPTIONS,
  type OptionKind,
  unknownOptionMessage,
} from '../train/config.ts';
import { PLAN_ENV, planRun, type RunPlan } from '../train/plan.ts';

/**
 * The launcher's flags (torchrun's: --nproc-per-node, --max-restarts, ...), kept as the
 * text given: the launcher validates them (--nproc-per-node also takes cpu/gpu/auto).
 */
const LAUNCH_KINDS: Record<keyof RawLaunchOptions, OptionKind> = LAUNCH_OPTION_KINDS;
const LAUNCH_NAMES = Object.keys(LAUNCH_KINDS);

/** Options whose value may be left out, and what a bare flag means: `--dashboard` a free port. */
const BARE_VALUES: Record<string, string> = { dashboard: '0', skipBadSamples: '100' };

export interface TrainArgs {
  /** The options resolved into the run plan (plan.options: the options as validated). */
  plan: RunPlan;
  /** Launcher flags given (as text); with nprocPerNode, `tsddp train` starts the workers. */
  launch: RawLaunchOptions;
  help: boolean;
  configFile?: string;
  /** The options the user set (flags, config file): --tune leaves these as given. */
  given: string[];
}

function camel(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
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

/**
 * The commander command for the flags. Every value is optional to commander, so a flag
 * given without one reaches the checks below (`true`), which name it with what it allows.
 */
function flagsCommand(): Command {
  const cmd = new Command('train')
    .exitOverride()
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} })
    .option('-h, --help')
    .option('--config [file]');
  const kinds: [string, OptionKind][] = [
    ...Object.entries(OPTIONS).map(([name, spec]) => [name, spec.kind] as [string, OptionKind]),
    ...(Object.entries(LAUNCH_KINDS) as [string, OptionKind][]),
  ];
  for (const [name, kind] of kinds) {
    const flag = flagOf(name);
    const option = new Option(`${flag} [${kind === 'bool' ? 'bool' : 'value'}]`).argParser((text) =>
      coerce(kind, text),
    );
    if (name in BARE_VALUES) option.preset(BARE_VALUES[name]);
    cmd.addOption(option);
    if (kind === 'bool') cmd.addOption(new Option(`--no-${flag.slice(2)}`));
  }
  return cmd;
}

function fileError(message: string): ConfigError {
  return new ConfigError(message, [message]);
}

/** Reads a config file: JSON, or YAML (.yaml, .yml). */
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

/** What commander left over: unknown flags (with their values) and stray words. */
function leftoverProblems(args: readonly string[]): { problems: string[]; unknown: boolean } {
  const problems: string[] = [];
  let unknown = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg.startsWith('-')) {
      const typed = arg.split('=')[0];
      const message = unknownOptionMessage(camel(typed.replace(/^-+/, '')), true, LAUNCH_NAMES);
      problems.push(message.replace(/^unknown option \S+/, `unknown option ${typed}`));
      unknown = true;
      // Its value, if it has one, is not a stray word.
      if (!arg.includes('=') && i + 1 < args.length && !args[i + 1].startsWith('-')) i++;
    } else problems.push(`unexpected argument '${arg}' (options are given as --name value)`);
  }
  return { problems, unknown };
}

/**
 * Parses `tsddp train` arguments (without the `train` word) into the run plan. A worker of
 * a launching `tsddp train` passes the plan it was given (`launched`): that is its whole
 * configuration, and flags beside it are refused rather than half applied.
 */
export function parseTrainArgs(argv: readonly string[], launched: RunPlan | null = null): TrainArgs {
  if (launched !== null) {
    if (argv.length > 0)
      failWith(
        [
          `${PLAN_ENV} gives this worker its run plan, and a worker takes no flags beside it (got ${argv.join(' ')})`,
        ],
        'worker arguments',
      );
    return { plan: launched, launch: {}, help: false, given: [] };
  }
  const cmd = flagsCommand();
  cmd.parse([...argv], { from: 'user' });
  const { help, config: configFlag, ...flags } = cmd.opts() as Record<string, unknown>;
  const { problems, unknown } = leftoverProblems(cmd.args);
  // A flag given without a value (commander gives `true`): only switches may.
  for (const [name, value] of Object.entries(flags)) {
    const kind =
      (OPTIONS as Record<string, { kind: OptionKind }>)[name]?.kind ??
      (LAUNCH_KINDS as Record<string, OptionKind>)[name];
    if (value !== true || kind === 'bool') continue;
    const spec = (OPTIONS as Record<string, { allowed: string } | undefined>)[name];
    problems.push(`option ${flagOf(name)} needs a value${spec ? ` (${spec.allowed})` : ''}`);
    delete flags[name];
  }
  if (configFlag === true) problems.push('option --config needs a file path');
  const configFile = typeof configFlag === 'string' ? configFlag : undefined;
  const fromFile = configFile !== undefined ? readConfigFile(configFile) : {};
  const launch = {
    ...takeLaunch(fromFile, problems, 'the config file'),
    ...takeLaunch(flags, problems, 'the flags'),
  };
  const input = { ...fromFile, ...flags };
  const source = configFile !== undefined ? `options (config file ${configFile} and flags)` : 'options';
  if (help === true) return { plan: planRun({}), launch, help: true, configFile, given: [] };
  if (problems.length > 0) {
    // Report the flags' problems and the values' together.
    const all = [...problems, ...configProblems(input)];
    if (unknown && !all.some((p) => p.startsWith('allowed options:')))
      all.push(allowedOptionsLine(true, LAUNCH_NAMES));
    failWith(all, source);
  }
  return { plan: planRun(input, source), launch, help: false, configFile, given: Object.keys(input) };
}

/** --help text: every option, its flag, allowed values, default and meaning. */
export function trainHelp(): string {
  const lines = [
    'Usage: tsddp train [--config file.json|file.yaml] [options]',
    '',
    'The classic DDP recipe (ResNets, ViTs). Runs as one worker (alone, or under tsrun/torchrun), or',
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

// The import rules of src/ (docs/architecture.md §2): no cycles, and dependencies that
// point down the layers. `npm run lint:deps` checks them; `npm test` runs it first.
const LIBRARY = '^src/(core|autograd|nn|optim|amp|data|checkpoint|distributed|models)/';
const APPLICATION = '^src/(launch|train|metrics|report|dashboard|benchmark|cli|host)/';

/** `from` may not import `to`. */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

module.exports = {
  forbidden: [
    forbid(
      'no-cycles',
      'An import cycle: the modules cannot be read (or loaded) one after the other.',
      {},
      {
        circular: true,
      },
    ),
    forbid(
      'errors-is-the-floor',
      'src/errors (TsddpError, the base of every tsddp error) imports nothing of tsddp: every layer may use it.',
      { path: '^src/errors/' },
      { path: '^src/(?!errors/)' },
    ),
    forbid(
      'env-is-the-floor',
      'src/env (the launcher environment and the debug switch, read by one rule) imports nothing of tsddp: every layer may use it.',
      { path: '^src/env/' },
      { path: '^src/(?!env/)' },
    ),
    forbid(
      'files-is-the-floor',
      'src/files (how tsddp creates and removes files safely) imports nothing of tsddp but src/errors: every layer may use it.',
      { path: '^src/files/' },
      { path: '^src/(?!files/|errors/)' },
    ),
    forbid(
      'core-is-the-bottom',
      'src/core (tensors, dtypes, ops, the addon) imports nothing else of tsddp but src/files.',
      { path: '^src/core/' },
      { path: '^src/(?!core/|files/|errors/|env/)' },
    ),
    forbid(
      'autograd-over-core-only',
      'src/autograd builds on the tensor layer alone.',
      { path: '^src/autograd/' },
      { path: '^src/(?!core/|autograd/|files/|errors/|env/)' },
    ),
    forbid(
      'nn-below-ddp',
      "src/nn reaches src/distributed only for process groups (SyncBatchNorm's), never DDP or the object collectives, which build on nn and checkpoint.",
      { path: '^src/nn/' },
      { path: '^src/distributed/(?!process-group\\.ts|store\\.ts|env\\.ts|errors\\.ts)' },
    ),
    forbid(
      'library-below-application',
      'The library layers (core .. models) know nothing of the launcher, the recipe, views or the CLI.',
      { path: LIBRARY },
      { path: APPLICATION },
    ),
    forbid(
      'metrics-is-a-leaf',
      'src/metrics (the record schema, files, formatting) imports nothing of tsddp but src/files: train, report and dashboard share it.',
      { path: '^src/metrics/' },
      { path: '^src/(?!metrics/|files/|errors/|env/)' },
    ),
    forbid(
      'host-is-a-leaf',
      'src/host (this machine: its CPU, and the child processes tsddp starts on it) imports nothing of tsddp: the recipe, the benchmarks and the tests share it.',
      { path: '^src/host/' },
      { path: '^src/(?!host/)' },
    ),
    forbid(
      'recipe-below-benchmark',
      'The recipe (src/train) does not import the benchmarks: the benchmarks measure the recipe, not the other way round. What both need (process gangs, the machine) lives in src/host.',
      { path: '^src/train/' },
      { path: '^src/benchmark/' },
    ),
    forbid(
      'launcher-knows-no-ui',
      'The launcher (like torchrun) knows nothing of the recipe, the dashboard, the report or the CLI; the CLI composes them.',
      { path: '^src/launch/' },
      { path: '^src/(train|dashboard|report|benchmark|cli)/' },
    ),
    forbid(
      'views-do-not-know-the-trainer',
      'The report and the dashboard read metrics (src/metrics), not the trainer.',
      { path: '^src/(report|dashboard)/' },
      { path: '^src/(train|cli|benchmark)/' },
    ),
    forbid(
      'cli-is-the-top',
      'Only the CLI imports the CLI.',
      { path: '^src/(?!cli/)' },
      { path: '^src/cli/' },
    ),
    forbid(
      'src-is-shipped',
      'src/ is the published package: it cannot import tests, benchmarks or scripts (scripts import src/, never the reverse).',
      { path: '^src/' },
      { path: '^(test|bench|examples|scripts)/' },
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/dashboard/public/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs'] },
  },
};

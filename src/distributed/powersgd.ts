// PowerSGD gradient compression's options, with the defaults and checks of PyTorch's
// torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook.PowerSGDState. The hook
// itself is C++ (native/src/powersgd.cc); see docs/architecture.md §6.

/** PyTorch's PowerSGDState arguments, in camelCase. */
export interface PowerSGDOptions {
  /** Rank of the low-rank approximation P Qᵀ of each gradient matrix (PyTorch: 1). */
  matrixApproximationRank?: number;
  /** Plain all-reduce for this many iterations first (PyTorch: start_powerSGD_iter = 1000). */
  startPowerSGDIter?: number;
  /** Compress a gradient only if (rows + cols) × rank is this many times smaller (PyTorch: 2). */
  minCompressionRate?: number;
  /** Add last iteration's local compression error back into the gradient (PyTorch: true). */
  useErrorFeedback?: boolean;
  /** Start each iteration's power iteration from the last Q (PyTorch: true). */
  warmStart?: boolean;
  /** Added to norms in Gram-Schmidt, against division by zero (PyTorch: 0). */
  orthogonalizationEpsilon?: number;
  /** Seeds the random initial Qs, the same on every rank (PyTorch: 0). */
  randomSeed?: number;
}

export type ResolvedPowerSGDOptions = Required<PowerSGDOptions>;

/** What PowerSGD sent in the last complete iteration, from DistributedDataParallel.stats(). */
export interface PowerSGDStats {
  /** Iterations the hook has completed (PyTorch: PowerSGDState.iter). */
  iteration: number;
  /** Bytes this rank all-reduced in the last iteration: Ps, Qs and the uncompressed gradients. */
  bytesPerStep: number;
  /** Bytes a plain all-reduce of the same gradients would have sent. */
  uncompressedBytesPerStep: number;
  /** uncompressedBytesPerStep / bytesPerStep (1 before startPowerSGDIter). */
  compressionRate: number;
}

const KEYS = new Set([
  'matrixApproximationRank',
  'startPowerSGDIter',
  'minCompressionRate',
  'useErrorFeedback',
  'warmStart',
  'orthogonalizationEpsilon',
  'randomSeed',
]);

/** Defaults filled in and every value checked, before any collective. */
export function resolvePowerSGDOptions(o: PowerSGDOptions = {}): ResolvedPowerSGDOptions {
  const what = 'DistributedDataParallel: powerSGD';
  for (const k of Object.keys(o)) if (!KEYS.has(k)) throw new TypeError(`${what}: unknown option '${k}'`);
  const r: ResolvedPowerSGDOptions = {
    matrixApproximationRank: o.matrixApproximationRank ?? 1,
    startPowerSGDIter: o.startPowerSGDIter ?? 1000,
    minCompressionRate: o.minCompressionRate ?? 2,
    useErrorFeedback: o.useErrorFeedback ?? true,
    warmStart: o.warmStart ?? true,
    orthogonalizationEpsilon: o.orthogonalizationEpsilon ?? 0,
    randomSeed: o.randomSeed ?? 0,
  };
  const int = (k: keyof PowerSGDOptions, v: number, min: number) => {
    if (!Number.isSafeInteger(v) || v < min)
      throw new RangeError(`${what}: ${k} must be an integer >= ${min}, got ${v}`);
  };
  int('matrixApproximationRank', r.matrixApproximationRank, 1);
  int('startPowerSGDIter', r.startPowerSGDIter, 0);
  // numpy's RandomState takes seeds below 2^32.
  int('randomSeed', r.randomSeed, 0);
  if (r.randomSeed > 0xffffffff)
    throw new RangeError(`${what}: randomSeed must be below 2^32, got ${r.randomSeed}`);
  for (const k of ['minCompressionRate', 'orthogonalizationEpsilon'] as const)
    if (!(Number.isFinite(r[k]) && r[k] >= 0))
      throw new RangeError(`${what}: ${k} must be a number >= 0, got ${r[k]}`);
  for (const k of ['useErrorFeedback', 'warmStart'] as const)
    if (typeof r[k] !== 'boolean')
      throw new TypeError(`${what}: ${k} must be true or false, got ${String(r[k])}`);
  // PyTorch's check: DDP rebuilds its buckets after the first iteration, so per-bucket
  // state (errors, warm-start Qs) is only valid from the second on.
  if ((r.useErrorFeedback || r.warmStart) && r.startPowerSGDIter <= 1)
    throw new RangeError(
      `${what}: startPowerSGDIter must be > 1 with useErrorFeedback or warmStart (PowerSGD can only start ` +
        `after DDP's first two iterations, which rebuild the buckets), got ${r.startPowerSGDIter}`,
    );
  return r;
}

/** The native counters as bytes per step. */
export function powerSGDStats(c: {
  iteration: number;
  elementsLastIter: number;
  gradientElementsLastIter: number;
  elementSize: number;
}): PowerSGDStats {
  const bytesPerStep = c.elementsLastIter * c.elementSize;
  const uncompressedBytesPerStep = c.gradientElementsLastIter * c.elementSize;
  return {
    iteration: c.iteration,
    bytesPerStep,
    uncompressedBytesPerStep,
    compressionRate: bytesPerStep > 0 ? uncompressedBytesPerStep / bytesPerStep : 1,
  };
}

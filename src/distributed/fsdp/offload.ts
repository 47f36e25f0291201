// torch.distributed.fsdp's OffloadPolicy and CPUOffloadPolicy (FSDP2's _fsdp_api.py): where
// the sharded parameters, their gradients and the optimizer state live. tsddp's fullyShard
// shards CPU parameters and computes on the CPU, so under CPUOffloadPolicy they are already
// where the policy puts them: nothing moves, as in PyTorch's fully_shard on a CPU mesh.

/** No offloading (the default): the shards live on the compute device. */
export class OffloadPolicy {}

/**
 * The shards, their gradients and the optimizer state on the CPU; each shard copied to the
 * compute device before its all-gather, each reduced gradient copied back.
 */
export class CPUOffloadPolicy extends OffloadPolicy {
  /**
   * Pin the shards' memory (faster host-device copies). Default true, as PyTorch; pinning
   * needs a GPU, so on a CPU-only machine pass false (PyTorch fails there too: "Cannot
   * access accelerator device when none is available").
   */
  readonly pinMemory: boolean;

  constructor(opts: { pinMemory?: boolean } = {}) {
    super();
    const unknown = Object.keys(opts).filter((k) => k !== 'pinMemory');
    if (unknown.length > 0)
      throw new TypeError(`CPUOffloadPolicy(): unknown option ${unknown.join(', ')}; it takes pinMemory`);
    const { pinMemory = true } = opts;
    if (typeof pinMemory !== 'boolean')
      throw new TypeError(`CPUOffloadPolicy(): pinMemory must be true or false, got ${String(pinMemory)}`);
    this.pinMemory = pinMemory;
  }
}

/**
 * Checks fullyShard's offloadPolicy: one of the classes above, and (CPUOffloadPolicy) no
 * pinned memory, which serves the copies to a GPU that tsddp's FSDP does not compute on yet.
 */
export function checkOffloadPolicy(policy: unknown): void {
  if (policy === undefined || policy === null) return;
  if (!(policy instanceof OffloadPolicy))
    throw new TypeError(
      'fullyShard(): offloadPolicy must be an OffloadPolicy or a CPUOffloadPolicy, e.g. new CPUOffloadPolicy({ pinMemory: false })',
    );
  if (policy instanceof CPUOffloadPolicy && policy.pinMemory)
    throw new TypeError(
      'fullyShard(): CPUOffloadPolicy with pinMemory: true pins the shards for copies to a GPU, and ' +
        "tsddp's FSDP computes on the CPU (PyTorch fails here too without a GPU); pass new CPUOffloadPolicy({ pinMemory: false })",
    );
}

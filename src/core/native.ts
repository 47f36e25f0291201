// The single place that loads the native addon (native/build/Release/tsddp.node).

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { TsddpError } from '../errors/index.ts';
import { TorchError } from './errors.ts';
import { isCompiled } from './module-url.ts';
import { torchFolderVersion } from './torch-version.mjs';

/** The addon's exports. Handles are small integers indexing the native slot table. */
/** A collective's end: a promise, or (blocking) nothing left to wait for but the value. */
export type Ended<T = void> = Promise<T> | T;
/** A collective issued with the 'handle' ending (opaque): native.waitPending() waits for it. */
export type PendingCall = { readonly __pendingCall: unique symbol };

export interface NativeAddon {
  setErrorClass(ctor: typeof TorchError): void;
  // tensors
  fromTyped(
    data: ArrayBufferView | ArrayBuffer,
    shape: number[],
    src: number,
    dst: number,
    device?: string,
  ): number;
  fromBuffer(data: ArrayBufferView | ArrayBuffer, shape: number[], dtype: number): number;
  /** Contiguous host copy; `raw` keeps float16/bfloat16 bits instead of widening to float32. */
  toBytes(h: number, raw?: boolean): [ArrayBuffer, number];
  toBytesAsync(h: number): Promise<[ArrayBuffer, number]>;
  item(h: number): number | boolean;
  dispose(h: number): void;
  disposeMany(handles: Int32Array, count: number): void;
  shape(h: number): number[];
  strides(h: number): number[];
  dim(h: number): number;
  numel(h: number): number;
  dtype(h: number): number;
  device(h: number): string;
  isContiguous(h: number, memoryFormat?: number): boolean;
  sameStorage(a: number, b: number): boolean;
  memory(): { tensors: number; bytes: number };
  // dispatcher
  findOp(name: string, overload: string): number;
  call(id: number, ...args: unknown[]): unknown;
  listOps(): OpSchema[];
  opSchema(id: number): OpSchema;
  // autograd
  backward(
    tensors: number[],
    grads: (number | null)[],
    retainGraph?: boolean,
    createGraph?: boolean,
    inputs?: number[],
  ): void;
  grad(
    outputs: number[],
    inputs: number[],
    gradOutputs: (number | null)[],
    retainGraph?: boolean,
    createGraph?: boolean,
    allowUnused?: boolean,
  ): (number | null)[];
  getGrad(h: number): number | null;
  setGrad(h: number, g: number | null): void;
  requiresGrad(h: number): boolean;
  setRequiresGrad(h: number, flag: boolean): void;
  isLeaf(h: number): boolean;
  retainGrad(h: number): void;
  gradFn(h: number): string | null;
  setHookDispatcher(fn: (hookId: number, gradHandle: number) => number): void;
  registerHook(h: number, hookId: number): number;
  removeHook(h: number, position: number): void;
  drainDeadHooks(): number[];
  isGradEnabled(): boolean;
  setGradEnabled(flag: boolean): void;
  getAutocast(deviceType: string): [boolean, number];
  setAutocast(deviceType: string, enabled: boolean, dtype: number): void;
  autocastEnter(): number;
  autocastExit(): number;
  // random, threads, build facts
  manualSeed(seed: number | bigint): void;
  generatorNew(device: string): number;
  generatorDefault(): number;
  generatorManualSeed(g: number, seed: number | bigint): void;
  generatorInitialSeed(g: number): bigint;
  generatorGetState(g: number): number;
  generatorSetState(g: number, state: number): void;
  getNumThreads(): number;
  setNumThreads(n: number): void;
  buildInfo(): BuildInfo;
  // distributed: stores
  tcpStoreNew(
    host: string,
    port: number,
    isServer: boolean,
    worldSize: number | undefined,
    timeoutMs: number,
    waitWorkers: boolean,
  ): [number, number];
  fileStoreNew(path: string, worldSize: number, timeoutMs: number): number;
  storeSet(store: number, key: string, value: string): void;
  storeGet(store: number, key: string, timeoutMs?: number): Promise<string>;
  storeAdd(store: number, key: string, delta: number): number;
  storeCheck(store: number, key: string): boolean;
  storeDestroy(store: number): void;
  // distributed: process groups and collectives
  processGroupNew(
    store: number,
    rank: number,
    size: number,
    backend: string,
    timeoutMs: number,
    hostname?: string,
    prefix?: string,
    interfaces?: string,
    cudaDevice?: number,
    groupName?: string,
  ): number;
  processGroupDestroy(pg: number): void;
  // Each collective's last argument, `blocking`, waits for it on this thread (and throws
  // there), returning undefined; without it the call returns a promise.
  allReduce(pg: number, tensor: number, op: string, timeoutMs?: number, blocking?: false): Promise<void>;
  allReduce(pg: number, tensor: number, op: string, timeoutMs: number | undefined, blocking: boolean): Ended;
  broadcast(pg: number, tensor: number, src: number, timeoutMs?: number, blocking?: boolean): Ended;
  allGather(pg: number, outputs: number[], input: number, timeoutMs?: number, blocking?: boolean): Ended;
  reduceScatter(
    pg: number,
    output: number,
    inputs: number[],
    op: string,
    timeoutMs?: number,
    blocking?: boolean,
  ): Ended;
  barrier(pg: number, timeoutMs?: number, blocking?: boolean): Ended;
  send(pg: number, tensor: number, dst: number, tag: number, blocking?: boolean): Ended;
  /** The sender's group rank, or a promise of it (src -1: any sender). */
  recv(pg: number, tensor: number, src: number, tag: number, blocking?: boolean): Ended<number>;
  allToAllSingle(
    pg: number,
    output: number,
    input: number,
    outputSplits: number[],
    inputSplits: number[],
    timeoutMs?: number,
    blocking?: boolean,
  ): Ended;
  allToAll(pg: number, outputs: number[], inputs: number[], timeoutMs?: number, blocking?: boolean): Ended;
  gather(
    pg: number,
    outputs: number[],
    input: number,
    root: number,
    timeoutMs?: number,
    blocking?: boolean,
  ): Ended;
  scatter(
    pg: number,
    output: number,
    inputs: number[],
    root: number,
    timeoutMs?: number,
    blocking?: boolean,
  ): Ended;
  reduce(pg: number, tensor: number, root: number, op: string, timeoutMs?: number, blocking?: boolean): Ended;
  allGatherIntoTensor(
    pg: number,
    output: number,
    input: number,
    timeoutMs?: number,
    blocking?: boolean | 'handle',
  ): Ended | PendingCall;
  reduceScatterTensor(
    pg: number,
    output: number,
    input: number,
    op: string,
    timeoutMs?: number,
    blocking?: boolean | 'handle',
  ): Ended | PendingCall;
  /** Waits on this thread for a collective issued with the 'handle' ending; its failure throws here. */
  waitPending(pending: PendingCall): void;
  allReduceCoalesced(
    pg: number,
    tensors: number[],
    op: string,
    timeoutMs?: number,
    blocking?: boolean,
  ): Ended;
  allGatherCoalesced(
    pg: number,
    outputs: number[][],
    inputs: number[],
    timeoutMs?: number,
    blocking?: boolean,
  ): Ended;
  monitoredBarrier(pg: number, timeoutMs: number, waitAllRanks: boolean, blocking?: boolean): Ended;
  // activation checkpointing (native/src/checkpoint.cc); fn's returned handles are handed
  // over: the node releases each once read (see releaseHandle in scope.ts)
  setCheckpointDispatcher(fn: (regionId: number, grads: (number | null)[]) => (number | null)[]): void;
  /** The outputs (detached) with a checkpointed region's node as grad_fn; its edges go to the inputs. */
  checkpointAttach(inputs: number[], outputs: number[], regionId: number): number[];
  drainDeadCheckpoints(): number[];
  // fully sharded data parallel (native/src/fsdp.cc)
  storageResize(tensor: number, bytes: number): void;
  copyKeepingVersion(dst: number, src: number): void;
  setBackwardCallback(fn: (id: number) => void): void;
  /** During a backward: runs the callback with `id` when the backward has finished its graph. */
  queueBackwardCallback(id: number): void;
  /** c10d's debug level: 0 OFF, 1 INFO, 2 DETAIL. */
  debugLevel(): number;
  /** Sets it; -1 reads TORCH_DISTRIBUTED_DEBUG. */
  setDebugLevel(level: number): void;
  /** The sum over the group's ranks, differentiable (backward all-reduces the gradient); blocks. */
  allReduceSumAutograd(pg: number, tensor: number): number;
  // distributed: DDP engine (c10d::Reducer + c10d::Logger)
  verifyParams(pg: number, params: number[]): void;
  broadcastCoalesced(pg: number, tensors: number[], bufferBytes: number, src: number): void;
  ddpNew(
    pg: number,
    params: number[],
    names: string[],
    bucketCapBytes: number,
    firstBucketBytes: number,
    initialBucketLimits: number[],
    findUnusedParameters: boolean,
    gradientAsBucketView: boolean,
    staticGraph: boolean,
    broadcastBuffers: boolean,
  ): [number, number[][]];
  ddpPrepareForForward(h: number): void;
  ddpRebuildBuckets(h: number): boolean;
  ddpPrepareForBackward(h: number, outputs: number[]): void;
  ddpSink(h: number, outputs: number[]): number[];
  ddpSetCommHook(h: number, pg: number, hook: string, powerSGD?: object): void;
  ddpJoinNotify(h: number, pg: number, ones: number, useStaticWorldSize: boolean): void;
  ddpJoinShadowBackward(h: number, pg: number, findUnused: boolean): void;
  ddpSetUnevenInputJoin(h: number): void;
  ddpStats(h: number): {
    ints: Record<string, number>;
    strs: Record<string, string>;
    bucketSizes: number[];
    powerSGD?: {
      iteration: number;
      elementsLastIter: number;
      gradientElementsLastIter: number;
      elementSize: number;
    };
  };
  ddpDestroy(h: number): void;
  /** torch.backends.cudnn.benchmark: sets it when given, returns it. */
  cudnnBenchmark(on?: boolean): boolean;
  // libtorch's profiler (core/profiler.ts)
  profilerStart(recordShapes: boolean): void;
  profilerStop(): ProfilerEvent[];
}

/** One op or autograd node recorded by libtorch's profiler (core/profiler.ts); microseconds, inclusive. */
export interface ProfilerEvent {
  name: string;
  thread: number;
  startUs: number;
  durationUs: number;
  /** Input shapes, e.g. '[32,192][192,768]', with { recordShapes: true }. */
  shapes?: string;
}

export interface BuildInfo {
  torchVersion: string;
  cudaAvailable: boolean;
  cudaDeviceCount: number;
  cudaCompiled: boolean;
  /** The addon's CUDA part (native/src/cuda: NCCL, torch.cuda's calls) is compiled in. */
  cudaBuilt: boolean;
  threads: number;
  parallelInfo: string;
  compiler: string;
  buildFlags?: string;
}

export interface OpArgSchema {
  name: string;
  type: string;
  kind: string;
  optional: boolean;
  hasDefault: boolean;
  kwargOnly: boolean;
  writes: boolean;
  fixedLength: number;
}

export interface OpSchema {
  name: string;
  overload: string;
  schema: string;
  args: OpArgSchema[];
  returns: OpArgSchema[];
}

const addonPath = fileURLToPath(new URL('../../native/build/Release/tsddp.node', import.meta.url));
const stampPath = fileURLToPath(new URL('../../.tsddp/setup.json', import.meta.url));
/** What rebuilds the addon: the package's own setup command, or the checkout's script. */
const setupCommand = isCompiled(import.meta.url) ? 'npx tsddp setup' : 'npm run setup';

/** The build failed or was skipped, or it no longer matches the libtorch it links to. */
export class NativeAddonError extends TsddpError {
  override name = 'NativeAddonError';
  readonly code = 'NATIVE_ADDON';
}

/**
 * Refuses an addon built against another torch than the one now in the folder it links
 * to (a `pip install -U torch` since the build): loading it would fail on a missing symbol
 * at best and corrupt memory at worst.
 */
function checkBuiltTorch(): void {
  let stamp: { torchDir?: string; torchVersion?: string };
  try {
    stamp = JSON.parse(readFileSync(stampPath, 'utf8'));
  } catch {
    return; // built by hand (cmake-js directly): nothing recorded to compare
  }
  if (!stamp.torchDir || !stamp.torchVersion) return;
  const now = existsSync(stamp.torchDir) ? torchFolderVersion(stamp.torchDir) : undefined;
  if (now === stamp.torchVersion) return;
  const fix =
    now === undefined
      ? `that folder no longer holds a torch; run \`${setupCommand}\` to find the torch you have now (or put it back)`
      : `it now holds torch ${now}; run \`${setupCommand}\` to install the addons for torch ${now}`;
  throw new NativeAddonError(
    `tsddp: the native addon was built against torch ${stamp.torchVersion} in ${stamp.torchDir}, but ${fix}`,
  );
}

function load(): NativeAddon {
  if (!existsSync(addonPath)) {
    throw new NativeAddonError(
      `tsddp: the native addon is not built (${addonPath} is missing); run \`${setupCommand}\``,
    );
  }
  checkBuiltTorch();
  const addon = createRequire(import.meta.url)(addonPath) as NativeAddon;
  addon.setErrorClass(TorchError);
  return addon;
}

export const native: NativeAddon = load();

// How close a training step comes to the hardware: the model's floating-point operations
// per image and the CPU's peak rate, so the report can state achieved FLOP/s and their
// share of the peak for both sides (they run the same model, so the same FLOPs).
import { readFileSync } from 'node:fs';
import { noGrad } from '../autograd/grad-mode.ts';
import * as t from '../core/index.ts';
import { cpuFlags, cpuinfoField, readCpuinfo } from '../host/machine.ts';
import { resnet18, resnet34, resnet50, resnet101, resnet152 } from '../models/index.ts';
import { Conv2d } from '../nn/layers/conv.ts';
import { Linear } from '../nn/layers/linear.ts';
import type { Module } from '../nn/module.ts';
import type { ModelSpec, ResNetName } from './cases.ts';

// ResNets only: a transformer's attention matmuls are not layers this count sees.
const BUILDERS: Record<ResNetName, typeof resnet18> = {
  resnet18,
  resnet34,
  resnet50,
  resnet101,
  resnet152,
};

/**
 * Multiply-accumulates of the convolutions and linear layers in one forward of `x`,
 * counted from each layer's output size (the rest of a ResNet, batch norm, ReLU and
 * pooling, is under 1%).
 */
export function forwardMacs(model: Module, x: t.Tensor): number {
  let macs = 0;
  const restore: (() => void)[] = [];
  for (const m of model.modules()) {
    let perOutput = 0;
    if (m instanceof Conv2d) perOutput = (m.inChannels / m.groups) * m.kernelSize[0] * m.kernelSize[1];
    else if (m instanceof Linear) perOutput = m.inFeatures;
    else continue;
    const forward = m.forward;
    const own = Object.hasOwn(m, 'forward');
    m.forward = (input: t.Tensor) => {
      const out = forward.call(m, input) as t.Tensor;
      macs += out.numel() * perOutput;
      return out;
    };
    restore.push(() => {
      if (own) m.forward = forward;
      else delete (m as { forward?: unknown }).forward;
    });
  }
  try {
    t.tidy(() => noGrad(() => model.forward(x)));
  } finally {
    for (const r of restore) r();
  }
  return macs;
}

/**
 * FLOPs of one training step per image: a forward is 2 FLOPs per multiply-accumulate and
 * the backward twice the forward (gradients of the inputs and of the weights), the usual
 * 3x-forward count (PyTorch's FlopCounterMode counts convolutions and matmuls this way).
 */
export function trainFlopsPerImage(spec: ModelSpec): number | null {
  const build = BUILDERS[spec.model as ResNetName];
  if (!build) return null;
  return t.tidy(() => {
    const model = build({
      numClasses: spec.stem === 'cifar' ? 10 : 1000,
      stem: spec.stem,
      widthMultiplier: spec.widthMultiplier,
    });
    model.eval();
    return 6 * forwardMacs(model, t.zeros([1, 3, spec.size, spec.size]));
  });
}

/** cpufreq's maximum clock of CPU 0 in kHz, or null where the kernel does not expose it (VMs). */
function cpufreqMaxKHz(): number | null {
  try {
    return (
      Number(readFileSync('/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq', 'utf8').trim()) || null
    );
  } catch {
    return null;
  }
}

export interface PeakFlops {
  /** Peak fp32 FLOP/s of one core: clock x vector lanes x 2 (FMA) x FMA units. */
  perCore: number;
  /** How it was computed, for the report. */
  basis: string;
}

/**
 * The CPU's fp32 peak from /proc/cpuinfo: the clock (cpufreq's maximum where the kernel
 * has it, else what /proc/cpuinfo reports), the widest vector unit its
 * flags name (AVX-512: 16 lanes, AVX2 + FMA: 8) and its FMA units per core, which no flag
 * states: 2 on current x86 server cores; AMD's Zen 4 (family 0x19) executes AVX-512 on
 * 256-bit units. Null where /proc/cpuinfo is missing (not Linux).
 */
export function cpuPeakFlops(cpuinfo?: string, maxKHz: number | null = cpufreqMaxKHz()): PeakFlops | null {
  const text = cpuinfo ?? readCpuinfo();
  if (text === null) return null;
  const field = (k: string) => cpuinfoField(text, k);
  const reported = Number(field('cpu MHz'));
  const mhz = maxKHz !== null && maxKHz > 0 ? maxKHz / 1000 : reported;
  const clock =
    maxKHz !== null && maxKHz > 0
      ? 'the maximum clock cpufreq reports'
      : 'the clock /proc/cpuinfo reports; in a VM often the base clock, so boost can put a case above 100%';
  const flags = cpuFlags(text);
  if (!(mhz > 0)) return null;
  const amdFamily = field('vendor_id') === 'AuthenticAMD' ? Number(field('cpu family')) : null;
  let lanes = flags.has('avx512f')
    ? 16
    : flags.has('avx2') && flags.has('fma')
      ? 8
      : flags.has('avx')
        ? 8
        : 4;
  let note = flags.has('avx512f') ? 'AVX-512' : lanes === 8 ? 'AVX2' : 'SSE';
  if (lanes === 16 && amdFamily !== null && amdFamily < 0x1a) {
    lanes = 8;
    note = 'AVX-512 on 256-bit units (AMD family < 0x1a)';
  }
  const fma = flags.has('fma') || lanes === 16 ? 2 : 1;
  const perCore = mhz * 1e6 * lanes * 2 * fma;
  return {
    perCore,
    basis: `${(mhz / 1000).toFixed(2)} GHz (${clock}) x ${lanes} fp32 lanes (${note}) x 2 (FMA) x ${fma} FMA unit(s) = ${(perCore / 1e9).toFixed(0)} GFLOP/s per core`,
  };
}

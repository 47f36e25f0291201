// torch.utils.tensorboard.SummaryWriter: event files TensorBoard reads, written as PyTorch
// writes them (torch/utils/tensorboard/writer.py). Arguments follow the nn rule
// (docs/guide/library.md, "Arguments"): PyTorch's parameters in its order, any of them by
// name in a trailing options object, and what tsddp cannot honour refused by name.
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Tensor } from '../../core/tensor.ts';
import { type Args, bind, signature } from '../../nn/args.ts';
import { TensorBoardError } from './errors.ts';
import { EventFileWriter } from './event-file.ts';
import {
  type HParamValue,
  histogram,
  hparams,
  image,
  type SummaryValue,
  scalar,
  text,
  type Values,
} from './summary.ts';

const INIT = signature('SummaryWriter', {
  optional: ['logDir', 'comment', 'purgeStep', 'maxQueue', 'flushSecs', 'filenameSuffix'],
});
const ADD_SCALAR = signature('SummaryWriter.addScalar', {
  required: ['tag', 'scalarValue'],
  optional: ['globalStep', 'walltime', 'newStyle', 'doublePrecision'],
});
const ADD_SCALARS = signature('SummaryWriter.addScalars', {
  required: ['mainTag', 'tagScalarDict'],
  optional: ['globalStep', 'walltime'],
});
const ADD_HISTOGRAM = signature('SummaryWriter.addHistogram', {
  required: ['tag', 'values'],
  optional: ['globalStep', 'bins', 'walltime', 'maxBins'],
});
const ADD_IMAGE = signature('SummaryWriter.addImage', {
  required: ['tag', 'imgTensor'],
  optional: ['globalStep', 'walltime', 'dataformats'],
});
const ADD_TEXT = signature('SummaryWriter.addText', {
  required: ['tag', 'textString'],
  optional: ['globalStep', 'walltime'],
});
const ADD_HPARAMS = signature('SummaryWriter.addHparams', {
  required: ['hparamDict', 'metricDict'],
  optional: ['hparamDomainDiscrete', 'runName', 'globalStep'],
});

interface InitParams {
  logDir?: string | null;
  comment?: string;
  purgeStep?: number | null;
  maxQueue?: number;
  flushSecs?: number;
  filenameSuffix?: string;
}
interface When {
  globalStep?: number | null;
  walltime?: number | null;
}
type ScalarParams = { tag: string; scalarValue: number | Tensor } & When & {
    newStyle?: boolean;
    doublePrecision?: boolean;
  };
type ScalarsParams = { mainTag: string; tagScalarDict: Record<string, number | Tensor> } & When;
type HistogramParams = {
  tag: string;
  values: Values;
  bins?: 'tensorflow' | number | readonly number[];
  maxBins?: number;
} & When;
type ImageParams = { tag: string; imgTensor: Values; dataformats?: string } & When;
type TextParams = { tag: string; textString: string } & When;
interface HparamsParams {
  hparamDict: Record<string, HParamValue>;
  metricDict: Record<string, number | Tensor>;
  hparamDomainDiscrete?: Record<string, readonly (number | string | boolean)[]>;
  runName?: string;
  globalStep?: number | null;
}

/** PyTorch's default log folder: runs/<Mon>DD_HH-MM-SS_<host><comment>, in local time. */
function defaultLogDir(comment: string): string {
  const d = new Date();
  const month = d.toLocaleString('en-US', { month: 'short' });
  const two = (n: number): string => String(n).padStart(2, '0');
  const stamp = `${month}${two(d.getDate())}_${two(d.getHours())}-${two(d.getMinutes())}-${two(d.getSeconds())}`;
  return join('runs', `${stamp}_${hostname()}${comment}`);
}

/**
 * The arguments of a method whose required arguments are dictionaries (addScalars,
 * addHparams): with only those given, the last is one of them, not the options object.
 */
function dictArgs(args: ArrayLike<unknown>, required: number): unknown[] {
  return args.length === required ? [...Array.from(args), {}] : Array.from(args);
}

function checkStep(step: number | null | undefined, what: string): number | undefined {
  if (step === null || step === undefined) return undefined;
  if (!Number.isSafeInteger(step))
    throw new TensorBoardError(`${what}: globalStep=${step} is not an integer`);
  return step;
}

/** Writers still open at exit are flushed then, so a run that ends without close() loses nothing queued. */
const open = new Set<EventFileWriter>();
process.on('exit', () => {
  for (const w of open) w.close();
});

export class SummaryWriter {
  readonly logDir: string;
  private readonly maxQueue: number;
  private readonly flushSecs: number;
  private readonly filenameSuffix: string;
  private purgeStep: number | undefined;
  /** The default writer (logDir) and addScalars' per-series writers, by folder. */
  private writers = new Map<string, EventFileWriter>();

  constructor(...args: Args<typeof INIT, InitParams>) {
    const o = bind<InitParams>(INIT, args, 'SummaryWriter');
    this.logDir = o.logDir || defaultLogDir(o.comment ?? '');
    this.maxQueue = o.maxQueue ?? 10;
    this.flushSecs = o.flushSecs ?? 120;
    this.filenameSuffix = o.filenameSuffix ?? '';
    if (!Number.isInteger(this.maxQueue) || this.maxQueue < 1)
      throw new TensorBoardError(`SummaryWriter: maxQueue=${this.maxQueue} is not a positive integer`);
    if (!(this.flushSecs >= 0))
      throw new TensorBoardError(`SummaryWriter: flushSecs=${this.flushSecs} is not >= 0`);
    this.purgeStep = checkStep(o.purgeStep, 'SummaryWriter');
    this.fileWriter();
  }

  /** The folder events are written to (PyTorch's get_logdir()). */
  getLogdir(): string {
    return this.logDir;
  }

  /** The writer of `dir` (the log folder by default), made on first use or after close(). */
  private fileWriter(dir = this.logDir): EventFileWriter {
    let w = this.writers.get(dir);
    if (w === undefined || w.closed) {
      w = new EventFileWriter(dir, this.maxQueue, this.flushSecs, this.filenameSuffix);
      this.writers.set(dir, w);
      open.add(w);
      if (dir === this.logDir && this.purgeStep !== undefined) {
        // TensorBoard hides the events of steps >= purgeStep written before this one (a resume).
        w.add({ step: this.purgeStep, file_version: 'brain.Event:2' });
        w.add({ step: this.purgeStep, session_log: { status: 'START' } });
        this.purgeStep = undefined;
      }
    }
    return w;
  }

  private addSummary(value: SummaryValue, when: When, what: string, dir?: string): void {
    const step = checkStep(when.globalStep, what);
    this.fileWriter(dir).add({
      summary: { value: [value] },
      ...(step === undefined ? {} : { step }),
      ...(when.walltime == null ? {} : { wall_time: when.walltime }),
    });
  }

  /** A scalar: a number or a one-element tensor, as float32 (newStyle: a tensor; doublePrecision: float64). */
  addScalar(...args: Args<typeof ADD_SCALAR, ScalarParams>): void {
    const o = bind<ScalarParams>(ADD_SCALAR, args, 'addScalar');
    let value = scalar(o.tag, o.scalarValue);
    if (o.newStyle) {
      const v = value.simple_value as number;
      const tensor = o.doublePrecision
        ? { dtype: 'DT_DOUBLE', double_val: [v] }
        : { dtype: 'DT_FLOAT', float_val: [v] };
      value = { tag: o.tag, tensor, metadata: { plugin_data: { plugin_name: 'scalars' } } };
    }
    this.addSummary(value, o, `addScalar '${o.tag}'`);
  }

  /** Several series in one chart: each value goes to <logDir>/<mainTag>_<key> under the tag mainTag. */
  addScalars(...args: Args<typeof ADD_SCALARS, ScalarsParams>): void {
    const o = bind<ScalarsParams>(ADD_SCALARS, dictArgs(args, 2), 'addScalars');
    const walltime = o.walltime ?? Date.now() / 1000;
    for (const [tag, v] of Object.entries(o.tagScalarDict)) {
      const dir = `${this.logDir}/${o.mainTag.replaceAll('/', '_')}_${tag}`;
      this.addSummary(
        scalar(o.mainTag, v),
        { globalStep: o.globalStep, walltime },
        `addScalars '${o.mainTag}'`,
        dir,
      );
    }
  }

  /** A histogram of the values (bins 'tensorflow', a count or edges; see summary.ts). */
  addHistogram(...args: Args<typeof ADD_HISTOGRAM, HistogramParams>): void {
    const o = bind<HistogramParams>(ADD_HISTOGRAM, args, 'addHistogram');
    this.addSummary(histogram(o.tag, o.values, o.bins, o.maxBins), o, `addHistogram '${o.tag}'`);
  }

  /** An image, CHW by default (dataformats: HWC, HW, ...): floats in 0..1, uint8 in 0..255. */
  addImage(...args: Args<typeof ADD_IMAGE, ImageParams>): void {
    const o = bind<ImageParams>(ADD_IMAGE, args, 'addImage');
    this.addSummary(image(o.tag, o.imgTensor, o.dataformats ?? 'CHW'), o, `addImage '${o.tag}'`);
  }

  /** A batch of images, NCHW by default, tiled into one image 8 to a row. */
  addImages(...args: Args<typeof ADD_IMAGE, ImageParams>): void {
    const o = bind<ImageParams>(ADD_IMAGE, args, 'addImages');
    this.addSummary(image(o.tag, o.imgTensor, o.dataformats ?? 'NCHW'), o, `addImages '${o.tag}'`);
  }

  /** Text (markdown), under the tag `<tag>/text_summary`. */
  addText(...args: Args<typeof ADD_TEXT, TextParams>): void {
    const o = bind<TextParams>(ADD_TEXT, args, 'addText');
    this.addSummary(text(o.tag, o.textString), o, `addText '${o.tag}'`);
  }

  /**
   * Hyperparameters and the metrics they gave, for TensorBoard's HPARAMS tab: written, with
   * the metrics as scalars, into <logDir>/<runName> (the time in seconds by default).
   */
  addHparams(...args: Args<typeof ADD_HPARAMS, HparamsParams>): void {
    const o = bind<HparamsParams>(ADD_HPARAMS, dictArgs(args, 2), 'addHparams');
    const summaries = hparams(o.hparamDict, o.metricDict, o.hparamDomainDiscrete);
    const dir = join(this.logDir, o.runName || String(Date.now() / 1000));
    const run = new SummaryWriter(dir, { maxQueue: this.maxQueue, flushSecs: this.flushSecs });
    try {
      for (const s of summaries) run.addSummary(s, o, 'addHparams');
      for (const [k, v] of Object.entries(o.metricDict)) run.addScalar(k, v, { globalStep: o.globalStep });
    } finally {
      run.close();
    }
  }

  /** Writes every queued event to disk. */
  flush(): void {
    for (const w of this.writers.values()) w.flush();
  }

  /** Flushes and closes every file; a later add opens new files, as PyTorch's does. */
  close(): void {
    for (const w of this.writers.values()) {
      w.close();
      open.delete(w);
    }
    this.writers.clear();
  }
}

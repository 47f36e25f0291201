import { TsddpError } from '../errors/index.ts';

/** An error raised by libtorch, carrying the op that raised it (e.g. `aten::add.Tensor`). */
export class TorchError extends TsddpError {
  override name = 'TorchError';
  readonly code = 'TORCH';
  readonly op: string;
  /** libtorch's message without the op prefix. */
  readonly detail: string;

  constructor(op: string, detail: string) {
    super(`${op}: ${firstLines(detail)}`);
    this.op = op;
    this.detail = detail;
  }
}

// libtorch appends C++ context ("Exception raised from ... (most recent call first)")
// to some messages; the lines before it are the ones a user needs.
function firstLines(message: string): string {
  const cut = message.indexOf('\nException raised from');
  return (cut >= 0 ? message.slice(0, cut) : message).trim();
}

/** Runs a conversion and prefixes a TypeError from it with the op it happened in. */
export function named<T>(op: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof TypeError) throw new TypeError(`${op}: ${e.message}`);
    throw e;
  }
}

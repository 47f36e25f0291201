// Grad mode scopes, like torch.no_grad() / torch.enable_grad(). libtorch keeps grad mode
// per thread; the async forms restore it when the promise settles.
import { native } from '../core/native.ts';

function withGradMode<T>(enabled: boolean, fn: () => T): T {
  const prev = native.isGradEnabled();
  native.setGradEnabled(enabled);
  try {
    const r = fn();
    if (r instanceof Promise) {
      throw new TypeError('noGrad()/enableGrad() got an async function; use noGradAsync()/enableGradAsync()');
    }
    return r;
  } finally {
    native.setGradEnabled(prev);
  }
}

/** Runs `fn` without recording operations for autograd. */
export function noGrad<T>(fn: () => T): T {
  return withGradMode(false, fn);
}

/** Runs `fn` with autograd recording on (inside a noGrad region). */
export function enableGrad<T>(fn: () => T): T {
  return withGradMode(true, fn);
}

async function withGradModeAsync<T>(enabled: boolean, fn: () => Promise<T>): Promise<T> {
  const prev = native.isGradEnabled();
  native.setGradEnabled(enabled);
  try {
    return await fn();
  } finally {
    native.setGradEnabled(prev);
  }
}

/**
 * Async form of noGrad(). Grad mode is per thread, not per async task: while `fn` is
 * suspended, other tasks on this thread also run without grad, exactly as they would
 * inside `with torch.no_grad():` around an `await` in Python.
 */
export function noGradAsync<T>(fn: () => Promise<T>): Promise<T> {
  return withGradModeAsync(false, fn);
}

export function enableGradAsync<T>(fn: () => Promise<T>): Promise<T> {
  return withGradModeAsync(true, fn);
}

export function isGradEnabled(): boolean {
  return native.isGradEnabled();
}

export function setGradEnabled(flag: boolean): void {
  native.setGradEnabled(flag);
}

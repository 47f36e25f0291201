// Memory scopes. V8 does not see tensor memory, so garbage collection alone would let
// it pile up: tensors created inside tidy()/scope() are freed when the scope ends,
// except what the scope returns or keep() marks. A tensor created outside any scope is
// registered with a FinalizationRegistry as a safety net (architecture §4): registering costs
// about half a microsecond, so only tensors that escape a scope pay it.
import { AsyncLocalStorage } from 'node:async_hooks';
import { native } from './native.ts';

/** What scopes hold: anything with a native handle (Tensor). */
export interface Handle {
  /** Native slot handle; -1 once disposed. */
  h: number;
  /** Bit flags: KEPT, FINALIZED. */
  f: number;
}

const KEPT = 1;
const FINALIZED = 2;

const finalizer = new FinalizationRegistry<number>((h) => native.dispose(h));
// Reused by Scope.close: scopes close one at a time on a thread, and the native call
// copies what it needs before returning.
let handleBuffer = new Int32Array(64);

export class Scope implements Disposable {
  readonly items: Handle[] = [];
  private closed = false;

  constructor(private readonly parent: Scope | null) {}

  /** Frees every tensor created in the scope except `except` (moved to the enclosing scope). */
  close(except?: readonly Handle[]): void {
    if (this.closed) return;
    this.closed = true;
    if (syncTop === this) syncTop = this.parent;
    const items = this.items;
    // Per-op hot path (a tidy around one op): no Set, no buffer, one native call.
    const keepOne = except?.length === 1 ? except[0] : undefined;
    const keepMany = except && except.length > 1 ? new Set(except) : undefined;
    if (items.length > handleBuffer.length) handleBuffer = new Int32Array(items.length * 2);
    let n = 0;
    for (let i = 0; i < items.length; i++) {
      const t = items[i];
      if (t.h < 0) continue;
      if ((t.f & KEPT) !== 0 || t === keepOne || keepMany?.has(t)) {
        adopt(t, this.parent);
        continue;
      }
      handleBuffer[n++] = t.h;
      t.h = -1;
    }
    if (n === 1) native.dispose(handleBuffer[0]);
    else if (n > 1) native.disposeMany(handleBuffer, n);
    items.length = 0;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

// Scopes opened synchronously (tidy, scope()) form a stack on this thread. Async scopes
// (tidyAsync) live in AsyncLocalStorage so concurrent tasks do not share them; the
// storage is consulted only while one exists, keeping the per-op cost flat.
let syncTop: Scope | null = null;
const asyncScopes = new AsyncLocalStorage<Scope>();
let asyncScopeCount = 0;

function currentScope(): Scope | null {
  if (syncTop !== null) return syncTop;
  if (asyncScopeCount > 0) return asyncScopes.getStore() ?? null;
  return null;
}

function adopt(t: Handle, scope: Scope | null): void {
  if (scope !== null && (t.f & KEPT) === 0) {
    scope.items.push(t);
  } else if ((t.f & FINALIZED) === 0) {
    t.f |= FINALIZED;
    finalizer.register(t, t.h, t);
  }
}

// Tensors created outside any scope are registered with the finalizer in batches: at the
// end of the current job (a microtask) or every PENDING_MAX tensors. One that is
// disposed before that — `a.add(b).dispose()` — never pays for registering and
// unregistering (~0.7 µs together, more than the op itself).
const PENDING_MAX = 1024;
let pending: Handle[] = [];
let flushScheduled = false;

function flushPending(): void {
  flushScheduled = false;
  const batch = pending;
  pending = [];
  for (let i = 0; i < batch.length; i++) {
    const t = batch[i];
    if (t.h >= 0 && (t.f & FINALIZED) === 0) {
      t.f |= FINALIZED;
      finalizer.register(t, t.h, t);
    }
  }
}

/** Called for every new tensor: it belongs to the innermost open scope. */
export function track(t: Handle): void {
  const s = syncTop ?? (asyncScopeCount > 0 ? (asyncScopes.getStore() ?? null) : null);
  if (s !== null) {
    s.items.push(t);
    return;
  }
  pending.push(t);
  if (pending.length >= PENDING_MAX) flushPending();
  else if (!flushScheduled) {
    flushScheduled = true;
    queueMicrotask(flushPending);
  }
}

/** Frees the tensor's memory now. Using it afterwards throws. */
export function disposeHandle(t: Handle): void {
  if (t.h < 0) return;
  if ((t.f & FINALIZED) !== 0) finalizer.unregister(t);
  native.dispose(t.h);
  t.h = -1;
}

/**
 * Hands the tensor's native handle over to native code, which releases it: the tensor reads
 * as disposed from now on, and neither its scope nor GC frees the handle.
 */
export function releaseHandle(t: Handle): number {
  const h = t.h;
  if (h < 0) throw new TypeError('releaseHandle(): the tensor is already disposed');
  if ((t.f & FINALIZED) !== 0) finalizer.unregister(t);
  t.h = -1;
  return h;
}

/** Keeps a tensor alive past the end of its scope (it is then freed by GC or dispose()). */
export function keep<T extends Handle>(t: T): T {
  t.f |= KEPT;
  return t;
}

function collect(value: unknown, out: Handle[], depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 4) return;
  if (typeof (value as Handle).h === 'number' && typeof (value as Handle).f === 'number') {
    out.push(value as Handle);
  } else if (Array.isArray(value)) {
    for (const v of value) collect(v, out, depth + 1);
  } else if (Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value)) collect(v, out, depth + 1);
  }
}

/**
 * Runs `fn` and frees every tensor it created, except those it returns (found in the
 * returned value, arrays and plain objects) and those passed to keep().
 */
export function tidy<T>(fn: () => T): T {
  const s = new Scope(currentScope());
  const prev = syncTop;
  syncTop = s;
  let result: T;
  try {
    result = fn();
  } catch (e) {
    syncTop = prev;
    s.close();
    throw e;
  }
  if (result instanceof Promise) {
    syncTop = prev;
    s.close();
    throw new TypeError('tidy() got an async function; use tidyAsync() for async code');
  }
  syncTop = prev;
  const out: Handle[] = [];
  collect(result, out);
  s.close(out);
  return result;
}

/**
 * The async form of tidy(): tensors created by `fn` — across awaits, and only in this
 * task's async context — are freed when it settles, except those it returns.
 */
export async function tidyAsync<T>(fn: () => Promise<T>): Promise<T> {
  const s = new Scope(currentScope());
  asyncScopeCount++;
  try {
    const result = await asyncScopes.run(s, fn);
    const out: Handle[] = [];
    collect(result, out);
    s.close(out);
    return result;
  } catch (e) {
    s.close();
    throw e;
  } finally {
    asyncScopeCount--;
  }
}

/**
 * Opens a scope for the rest of a block: `using _ = scope();`. Every tensor created on
 * this thread while it is the innermost scope is freed when the block ends. In async
 * code where other tasks create tensors concurrently, use tidyAsync() instead.
 */
export function scope(): Scope {
  const s = new Scope(currentScope());
  syncTop = s;
  return s;
}

/** Live tensor handles and the bytes of their distinct storages. */
export function memory(): { tensors: number; bytes: number } {
  return native.memory();
}

// Whether anything answers at the rendezvous store's address yet: a plain TCP connect
// from Node, before libtorch's TCPStore client blocks the thread (retrying, silently,
// until its timeout). A rank that finds nothing there says so at once instead of
// waiting in silence for minutes.
//
// It also keeps libtorch's C++ stacks off the console: the TCPStore client logs every
// failed connection to this process's stderr with its stack (16 `frame #` lines a try).
// A launcher filters its workers' stderr, but nothing filters its own, nor that of a
// worker started by another launcher; so a client is created only once the address
// answers, and a closed or unreachable one ends in a typed error naming it.
// TORCH_SHOW_CPP_STACKTRACES=1 (PyTorch's switch for C++ stacks) lets libtorch try anyway.
import { connect } from 'node:net';

/** Whether C++ stack traces are wanted (TORCH_SHOW_CPP_STACKTRACES=1, as in PyTorch). */
export function cppStacktracesShown(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.TORCH_SHOW_CPP_STACKTRACES === '1';
}

/** Why no TCP connection to host:port opened within `ms` ('connection refused', ...), or null when one did. */
export function probeStore(host: string, port: number, ms: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (why: string | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => done(`no answer within ${Number((ms / 1000).toFixed(3))} s`), ms);
    socket.once('connect', () => done(null));
    socket.once('error', (e: NodeJS.ErrnoException) => done(socketErrorText(e)));
  });
}

function socketErrorText(e: NodeJS.ErrnoException): string {
  switch (e.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'ENOTFOUND':
      return 'unknown host name';
    default:
      return e.message;
  }
}

/** Resolves true when a TCP connection to host:port opens within `ms`, false otherwise. */
export async function storeAnswers(host: string, port: number, ms: number): Promise<boolean> {
  return (await probeStore(host, port, ms)) === null;
}

/**
 * Tries to connect until one opens or `ms` pass (or `stopped()`): null when one opened,
 * else why the last try failed.
 */
export async function waitForStore(
  host: string,
  port: number,
  ms: number,
  stopped: () => boolean = () => false,
): Promise<string | null> {
  const deadline = Date.now() + ms;
  for (;;) {
    const why = await probeStore(host, port, Math.max(1, Math.min(2000, deadline - Date.now())));
    if (why === null || Date.now() >= deadline || stopped()) return why;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Waits up to `graceMs` for the store; if it is not there by then, tells stderr which
 * address this rank is waiting for and for how long, and returns false (the caller waits
 * on, up to its timeout).
 */
export async function announceStoreWait(
  host: string,
  port: number,
  rank: number,
  timeoutS: number,
  graceMs = 3000,
): Promise<boolean> {
  if ((await waitForStore(host, port, Math.min(graceMs, timeoutS * 1000))) === null) return true;
  process.stderr.write(
    `tsddp: rank ${rank} is waiting for the rendezvous store at ${host}:${port} (MASTER_ADDR:MASTER_PORT): ` +
      `nothing answers there yet; rank 0 or the launcher should be serving it. Giving up after ${timeoutS} s\n`,
  );
  return false;
}

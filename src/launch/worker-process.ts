// One worker process: spawned in its own process group, its output split into lines with
// a `[rank N]` prefix on the console and copied raw into per-rank log files, the tail of
// its stderr kept for the failure summary.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { ensureSafeDir, openAppend } from '../files/index.ts';
import type { StdStreams } from './options.ts';

/** How a worker ended: an exit code, or the signal that killed it. */
export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all. */
  spawnError?: string;
  at: number;
}

export interface WorkerSpec {
  rank: number;
  localRank: number;
  /** Executable and arguments. */
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  console: StdStreams;
  files: StdStreams;
  /** Folder for stdout.log / stderr.log (when a stream goes to files). */
  logDir?: string;
}

export const STDERR_TAIL_LINES = 20;

/** The console line a worker's status (progress) line is drawn on, if one is open. */
let openStatus: NodeJS.WriteStream | null = null;

/** What a terminal shows of a line: the text after its last carriage return. */
function visible(line: string): string {
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  return text.slice(text.lastIndexOf('\r') + 1).replaceAll('\x1b[K', '');
}

/**
 * Splits a stream into lines, prefixes them for the console, and copies it to a file. On a
 * terminal, a line being rewritten with carriage returns (a progress line) is redrawn in
 * place as it comes, instead of waiting for its newline.
 */
const CPP_FRAME = /^frame #\d+: /;

export class StreamSink {
  private partial = '';
  private fd: number | null = null;
  private readonly live: boolean;
  readonly tail: string[] = [];
  /**
   * libtorch logs some errors with their C++ stack (`frame #0: ...`, dozens of lines);
   * like PyTorch, they are shown only with TORCH_SHOW_CPP_STACKTRACES=1. The log files
   * keep every line.
   */
  private readonly hideCppFrames = process.env.TORCH_SHOW_CPP_STACKTRACES !== '1';
  private hiddenFrames = 0;

  constructor(
    private readonly prefix: string,
    private readonly console: NodeJS.WriteStream | null,
    filePath: string | null,
    private readonly keepTail: boolean,
  ) {
    if (filePath) this.fd = openAppend(filePath);
    this.live = console?.isTTY === true;
  }

  write(chunk: Buffer): void {
    // Synchronous writes: the file is complete whenever the launcher exits.
    if (this.fd !== null) writeSync(this.fd, chunk);
    const text = this.partial + chunk.toString('utf8');
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.line(visible(line));
    const cr = this.partial.lastIndexOf('\r');
    if (this.live && this.console && cr >= 0) {
      this.partial = this.partial.slice(cr);
      const status = visible(this.partial);
      if (status) {
        this.console.write(`\r\x1b[K${this.prefix}${status}`);
        openStatus = this.console;
      }
    }
  }

  end(): void {
    if (this.partial) this.line(visible(this.partial));
    this.partial = '';
    this.flushHiddenFrames();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private line(clean: string): void {
    if (this.hideCppFrames && CPP_FRAME.test(clean)) {
      this.hiddenFrames++;
      return;
    }
    this.flushHiddenFrames();
    this.emit(clean);
  }

  private flushHiddenFrames(): void {
    if (this.hiddenFrames === 0) return;
    const n = this.hiddenFrames;
    this.hiddenFrames = 0;
    this.emit(`(${n} C++ stack frames hidden; TORCH_SHOW_CPP_STACKTRACES=1 shows them)`);
  }

  private emit(clean: string): void {
    if (this.console) {
      if (openStatus) openStatus.write('\r\x1b[K');
      openStatus = null;
      this.console.write(`${this.prefix}${clean}\n`);
    }
    if (this.keepTail) {
      this.tail.push(clean);
      if (this.tail.length > STDERR_TAIL_LINES) this.tail.shift();
    }
  }
}

export class WorkerProcess {
  readonly rank: number;
  readonly localRank: number;
  private readonly child: ChildProcess;
  private readonly stdout: StreamSink;
  private readonly stderr: StreamSink;
  private exitInfo: WorkerExit | null = null;
  /** Resolves when the process has exited (or failed to start). */
  readonly exited: Promise<WorkerExit>;
  /** Resolves when its output streams are drained as well (or after a short wait). */
  readonly closed: Promise<void>;

  constructor(spec: WorkerSpec) {
    this.rank = spec.rank;
    this.localRank = spec.localRank;
    const prefix = `[rank ${spec.rank}] `;
    const files = spec.logDir && (spec.files.stdout || spec.files.stderr);
    if (files && spec.logDir) ensureSafeDir(spec.logDir, '--log-dir');
    const path = (name: string, on: boolean) => (on && spec.logDir ? join(spec.logDir, name) : null);
    this.stdout = new StreamSink(
      prefix,
      spec.console.stdout ? process.stdout : null,
      path('stdout.log', spec.files.stdout),
      false,
    );
    this.stderr = new StreamSink(
      prefix,
      spec.console.stderr ? process.stderr : null,
      path('stderr.log', spec.files.stderr),
      true,
    );
    // detached: its own session and process group, so the whole tree can be signalled
    // at once and a terminal's Ctrl-C reaches the launcher only (which forwards it).
    this.child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.pipe(this.child.stdout, this.stdout);
    this.pipe(this.child.stderr, this.stderr);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo ??= { code, signal, at: Date.now() };
        resolve(this.exitInfo);
      });
      this.child.once('error', (e) => {
        // 'error' without 'exit' means the process never started.
        if (this.child.pid === undefined) {
          this.exitInfo ??= { code: null, signal: null, spawnError: e.message, at: Date.now() };
          resolve(this.exitInfo);
        }
      });
    });
    const streamsClosed = new Promise<void>((resolve) => {
      if (this.child.pid === undefined) resolve();
      this.child.once('close', () => resolve());
      this.child.once('error', () => resolve());
    });
    // A grandchild that inherited the pipes can keep them open: don't wait for it long.
    this.closed = this.exited.then(() =>
      Promise.race([streamsClosed, new Promise<void>((r) => setTimeout(r, 500).unref())]).then(() => {
        this.stdout.end();
        this.stderr.end();
      }),
    );
  }

  private pipe(stream: Readable | null, sink: StreamSink): void {
    stream?.on('data', (chunk: Buffer) => sink.write(chunk));
    stream?.on('error', () => {});
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Null while running. */
  get exit(): WorkerExit | null {
    return this.exitInfo;
  }

  /** The last lines the worker wrote to stderr (complete after `closed`). */
  stderrTail(): string[] {
    return [...this.stderr.tail];
  }

  /**
   * Signals the worker's whole process group (its own children too). Safe to call after
   * it exited: the group may still hold grandchildren, and a gone group is ignored.
   */
  signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: nothing left in the group.
    }
  }
}

/** "exit code 3" / "signal SIGKILL" / "failed to start: ...". */
export function describeExit(e: WorkerExit): string {
  if (e.spawnError) return `failed to start: ${e.spawnError}`;
  if (e.signal) return `was killed by signal ${e.signal}`;
  return `exited with code ${e.code}`;
}

export function isSuccess(e: WorkerExit): boolean {
  return !e.spawnError && e.signal === null && e.code === 0;
}

// The dashboard's web server: the page (static files from public/ and uPlot's dist file)
// and /events, a server-sent event stream. Every event is kept in a bounded history that a
// page replays when it connects, so a page opened late shows the whole run. Loopback only.

import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { TsddpError } from '../errors/index.ts';
import type { DashboardEvent } from './events.ts';

/** The dashboard could not start (a busy port, ...); the message names the address. */
export class DashboardError extends TsddpError {
  override name = 'DashboardError';
  readonly code = 'DASHBOARD';
}

export interface DashboardOptions {
  /** 0 picks a free port. */
  port: number;
  /** Step records kept for replay; past it, only every 2nd, 4th, ... step is kept (default 20,000). */
  maxStepRecords?: number;
}

export const DASHBOARD_HOST = '127.0.0.1';
const HEARTBEAT_MS = 15_000;

const publicFile = (name: string) => new URL(`./public/${name}`, import.meta.url);
const uplotFile = (name: string) => createRequire(import.meta.url).resolve(`uplot/dist/${name}`);

/** Path -> [file, content type]; read once, at start. */
const STATIC: Record<string, [string | URL, string]> = {
  '/': [publicFile('index.html'), 'text/html; charset=utf-8'],
  '/app.js': [publicFile('app.js'), 'text/javascript; charset=utf-8'],
  '/style.css': [publicFile('style.css'), 'text/css; charset=utf-8'],
  '/uplot.js': [uplotFile('uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
  '/uplot.css': [uplotFile('uPlot.min.css'), 'text/css; charset=utf-8'],
};

// A page on another site must not read the metrics through a rebound DNS name; port
// forwarding (ssh -L) keeps a loopback host name, so only the name is checked.
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

export class DashboardServer {
  /** Events for replay; `step` is a step record's step number. */
  private readonly history: { line: string; step: number | null }[] = [];
  private steps = 0;
  /** Step records kept are those whose step is a multiple of this (aligned across ranks). */
  private stride = 1;
  private readonly clients = new Set<ServerResponse>();
  private readonly files = new Map<string, [Buffer, string]>();
  private readonly heartbeat: NodeJS.Timeout;
  private closed = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly maxStepRecords: number,
  ) {
    for (const [path, [file, type]] of Object.entries(STATIC))
      this.files.set(path, [readFileSync(file), type]);
    server.on('request', (req, res) => this.handle(req, res));
    this.heartbeat = setInterval(() => this.send(': ping\n\n'), HEARTBEAT_MS).unref();
  }

  /** Starts serving on 127.0.0.1:port. */
  static start(opts: DashboardOptions): Promise<DashboardServer> {
    const server = createServer();
    return new Promise((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) => {
        const where = `${DASHBOARD_HOST}:${opts.port}`;
        const why =
          e.code === 'EADDRINUSE'
            ? 'the port is in use (choose another with --dashboard PORT, or --dashboard 0 for a free one)'
            : e.code === 'EACCES'
              ? 'permission denied (ports below 1024 need privileges)'
              : e.message;
        reject(new DashboardError(`cannot serve the dashboard on ${where}: ${why}`, { cause: e }));
      });
      server.listen(opts.port, DASHBOARD_HOST, () => {
        const { port } = server.address() as AddressInfo;
        resolve(new DashboardServer(server, port, opts.maxStepRecords ?? 20_000));
      });
    });
  }

  get url(): string {
    return `http://${DASHBOARD_HOST}:${this.port}/`;
  }

  /** Pages connected to /events now. */
  get clientCount(): number {
    return this.clients.size;
  }

  /** Sends an event to every page and keeps it for pages that connect later. */
  publish(event: DashboardEvent): void {
    if (this.closed) return;
    const line = `data: ${JSON.stringify(event)}\n\n`;
    this.send(line);
    const step = event.type === 'step' ? event.step : null;
    if (step !== null && step % this.stride !== 0) return;
    this.history.push({ line, step });
    if (step !== null && ++this.steps > this.maxStepRecords) this.thin();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Ends every event stream (after what was published) and stops serving. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const res of this.clients) res.end();
    this.clients.clear();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
      // A page that does not read its stream keeps the socket busy: give it a second.
      setTimeout(() => this.server.closeAllConnections(), 1000).unref();
    });
  }

  /** Doubles the stride, so about half the step records go; other events all stay. */
  private thin(): void {
    this.stride *= 2;
    const kept = this.history.filter((h) => h.step === null || h.step % this.stride === 0);
    this.history.splice(0, this.history.length, ...kept);
    this.steps = kept.filter((h) => h.step !== null).length;
  }

  private send(text: string): void {
    for (const res of this.clients) res.write(text);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (!LOOPBACK_NAMES.has(host)) {
      res
        .writeHead(403, { 'content-type': 'text/plain' })
        .end('the dashboard answers loopback host names only\n');
      return;
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/events') {
      this.stream(res);
      return;
    }
    const file = this.files.get(path);
    if (file === undefined || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    res.writeHead(200, { 'content-type': file[1], 'cache-control': 'no-cache' }).end(file[0]);
  }

  private stream(res: ServerResponse): void {
    if (this.closed) {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    // The replay: everything so far, in one write.
    res.write(`retry: 2000\n\n${this.history.map((h) => h.line).join('')}`);
    this.clients.add(res);
    res.on('close', () => this.clients.delete(res));
  }
}

// Emulated machines on one Linux host for bench/network.ts: each node is a network
// namespace whose eth0 is one end of a veth pair; the other ends are ports of a bridge in a
// switch namespace of their own, so every node reaches every other through the switch, as
// on a rack's top-of-rack switch. The Linux token-bucket filter (tc tbf) caps each link in
// both directions: on the node's eth0 (what it sends) and on its switch port (what it
// receives). The root namespace is not touched, and the names carry a random tag, so only
// what this module made is ever deleted: by destroy(), and at exit if the caller did not
// get there (a failure, Ctrl-C). Needs root (CAP_NET_ADMIN) and iproute2.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export class NetnsError extends Error {
  override name = 'NetnsError';
}

/** Why this process cannot make namespaces, or null when it can. */
export function netnsUnavailable(): string | null {
  if (process.platform !== 'linux') return `network namespaces are Linux only (this is ${process.platform})`;
  if (process.getuid?.() !== 0)
    return 'making network namespaces and tc qdiscs needs root (run it with sudo)';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
    execFileSync('tc', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'needs iproute2 (the ip and tc commands)';
  }
  // Root is not enough in a container without CAP_SYS_ADMIN/CAP_NET_ADMIN, nor tbf without
  // its kernel module: make a namespace with a capped loopback, then delete it.
  const probe = `tsddp-probe-${randomBytes(3).toString('hex')}`;
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'pipe' });
    const tbf = [
      'qdisc',
      'add',
      'dev',
      'lo',
      'root',
      'tbf',
      'rate',
      '1gbit',
      'burst',
      '65536',
      'latency',
      '100ms',
    ];
    execFileSync('tc', ['-n', probe, ...tbf], { stdio: 'pipe' });
    // ip netns exec mounts the namespace's own /sys: a container may refuse that too.
    execFileSync('ip', ['netns', 'exec', probe, process.execPath, '-e', ''], { stdio: 'pipe' });
  } catch (e) {
    const stderr = String((e as { stderr?: Buffer }).stderr ?? '').trim();
    return `cannot make a network namespace with a tc tbf qdisc here: ${stderr || (e as Error).message}`;
  } finally {
    try {
      execFileSync('ip', ['netns', 'del', probe], { stdio: 'ignore' });
    } catch {}
  }
  return null;
}

/** "10gbit", "1gbit", "100mbit" (tc's units) as bits per second. */
export function parseRate(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(k|m|g)bit$/i.exec(text.trim());
  if (!m) throw new NetnsError(`rate '${text}': expected a number and kbit, mbit or gbit (e.g. 1gbit)`);
  return Number(m[1]) * { k: 1e3, m: 1e6, g: 1e9 }[m[2].toLowerCase() as 'k' | 'm' | 'g'];
}

/** The nodes' namespaces, addresses and link cap; see the file's comment. */
export class Network {
  /** Namespaces made so far (the switch first), deleted by destroy(). */
  private readonly made: string[] = [];
  private readonly onExit = () => this.destroySync();
  /** Killed by a signal, 'exit' handlers do not run: delete first, then die of it. */
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.destroySync();
    process.kill(process.pid, signal);
  };
  readonly nodes: { ns: string; addr: string }[] = [];
  readonly switchNs: string;
  private rate: string | null = null;

  private constructor(readonly tag: string) {
    this.switchNs = `tsddp-${tag}-sw`;
    process.once('exit', this.onExit);
    for (const s of SIGNALS) process.once(s, this.onSignal);
  }

  /** `n` nodes on one switch, links uncapped until setRate. */
  static async create(n: number): Promise<Network> {
    const why = netnsUnavailable();
    if (why !== null) throw new NetnsError(why);
    const net = new Network(randomBytes(3).toString('hex'));
    try {
      await net.addNs(net.switchNs);
      await net.ip(net.switchNs, 'link', 'add', 'br0', 'type', 'bridge');
      await net.ip(net.switchNs, 'link', 'set', 'br0', 'up');
      for (let i = 0; i < n; i++) await net.addNode(i);
    } catch (e) {
      await net.destroy();
      throw e;
    }
    return net;
  }

  private async addNs(ns: string): Promise<void> {
    await run('ip', ['netns', 'add', ns]);
    this.made.push(ns);
    await this.ip(ns, 'link', 'set', 'lo', 'up');
  }

  private async addNode(i: number): Promise<void> {
    const ns = `tsddp-${this.tag}-n${i}`;
    await this.addNs(ns);
    // Both ends are made inside the namespaces (-n), never in the root namespace.
    await run('ip', [
      '-n',
      ns,
      'link',
      'add',
      'eth0',
      'type',
      'veth',
      'peer',
      'name',
      `p${i}`,
      'netns',
      this.switchNs,
    ]);
    const addr = `10.77.0.${i + 1}`;
    await this.ip(ns, 'addr', 'add', `${addr}/24`, 'dev', 'eth0');
    await this.ip(ns, 'link', 'set', 'eth0', 'mtu', '9000', 'up');
    await this.ip(this.switchNs, 'link', 'set', `p${i}`, 'master', 'br0');
    await this.ip(this.switchNs, 'link', 'set', `p${i}`, 'mtu', '9000', 'up');
    this.nodes.push({ ns, addr });
  }

  private ip(ns: string, ...args: string[]) {
    return run('ip', ['-n', ns, ...args]);
  }

  /**
   * Caps every link at `rate` (tc's syntax, e.g. 1gbit) in both directions, or removes the
   * cap (null). The bucket holds 10 ms at the rate (at least 64 KiB): enough for the
   * kernel's 64 KiB segments at any rate, and small enough that the cap holds within a step.
   */
  async setRate(rate: string | null): Promise<void> {
    const ends = this.nodes.flatMap((node, i) => [
      [node.ns, 'eth0'],
      [this.switchNs, `p${i}`],
    ]);
    for (const [ns, dev] of ends) {
      if (rate === null) {
        if (this.rate !== null) await run('tc', ['-n', ns, 'qdisc', 'del', 'dev', dev, 'root']);
        continue;
      }
      const burst = Math.max(65536, Math.round((parseRate(rate) / 8) * 0.01));
      await run('tc', [
        '-n',
        ns,
        'qdisc',
        'replace',
        'dev',
        dev,
        'root',
        'tbf',
        'rate',
        rate,
        'burst',
        String(burst),
        'latency',
        '100ms',
      ]);
    }
    this.rate = rate;
  }

  /** Bytes sent by all nodes so far (their eth0 counters). */
  async txBytes(): Promise<number> {
    let sum = 0;
    for (const { ns } of this.nodes) {
      const { stdout } = await run('ip', ['-n', ns, '-s', '-j', 'link', 'show', 'dev', 'eth0']);
      const [link] = JSON.parse(stdout) as { stats64: { tx: { bytes: number } } }[];
      sum += link.stats64.tx.bytes;
    }
    return sum;
  }

  /** The command prefix that runs a program inside node `i`. */
  wrap(i: number): string[] {
    return ['ip', 'netns', 'exec', this.nodes[i].ns];
  }

  /** Deletes the namespaces this object made (their veths and bridge go with them). */
  async destroy(): Promise<void> {
    process.removeListener('exit', this.onExit);
    for (const s of SIGNALS) process.removeListener(s, this.onSignal);
    for (const ns of this.made.splice(0).reverse()) await run('ip', ['netns', 'del', ns]).catch(() => {});
  }

  private destroySync(): void {
    for (const ns of this.made.splice(0).reverse()) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {}
    }
  }
}

// Network namespaces as stand-in machines: n "nodes", each a namespace with one address,
// joined by a bridge in a hub namespace. Needs root and iproute2; `create` returns why
// not where the machine does not permit it.
import { execFileSync } from 'node:child_process';

export interface NetNodes {
  /** Namespace names, one per node. */
  ns: string[];
  /** Each node's address on the shared network. */
  addr: string[];
  /** `ip netns exec <ns>`: run a command on node i. */
  prefix(i: number): string[];
  /** Cuts node i off the network (its cable pulled). */
  unplug(i: number): void;
  remove(): void;
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
}

/** Builds `n` nodes on 10.<subnet>.0.0/24; returns a string (the reason) when it cannot. */
export function createNetNodes(n: number, subnet: number): NetNodes | string {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'creating network namespaces needs root';
  const tag = `${process.pid % 100000}`;
  const hub = `tsh${tag}`;
  const ns = Array.from({ length: n }, (_, i) => `tsn${tag}n${i}`);
  const addr = ns.map((_, i) => `10.${subnet}.0.${i + 1}`);
  const hubEnd = (i: number) => `th${tag}n${i}`;
  const remove = () => {
    for (const name of [...ns, hub]) {
      try {
        ip('netns', 'del', name); // takes the veth pairs with it
      } catch {}
    }
  };
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return "the 'ip' command (iproute2) is not installed";
  }
  try {
    ip('netns', 'add', hub);
    ip('-n', hub, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', hub, 'link', 'set', 'br0', 'up');
    for (let i = 0; i < n; i++) {
      ip('netns', 'add', ns[i]);
      ip('link', 'add', `tv${tag}n${i}`, 'type', 'veth', 'peer', 'name', hubEnd(i));
      ip('link', 'set', `tv${tag}n${i}`, 'netns', ns[i]);
      ip('link', 'set', hubEnd(i), 'netns', hub);
      ip('-n', hub, 'link', 'set', hubEnd(i), 'master', 'br0');
      ip('-n', hub, 'link', 'set', hubEnd(i), 'up');
      ip('-n', ns[i], 'addr', 'add', `${addr[i]}/24`, 'dev', `tv${tag}n${i}`);
      ip('-n', ns[i], 'link', 'set', `tv${tag}n${i}`, 'up');
      ip('-n', ns[i], 'link', 'set', 'lo', 'up');
    }
  } catch (e) {
    remove();
    const stderr = (e as { stderr?: Buffer }).stderr?.toString().trim();
    return `this machine does not permit network namespaces / bridges: ${stderr || (e as Error).message}`;
  }
  return {
    ns,
    addr,
    prefix: (i) => ['ip', 'netns', 'exec', ns[i]],
    unplug: (i) => ip('-n', hub, 'link', 'set', hubEnd(i), 'down'),
    remove,
  };
}

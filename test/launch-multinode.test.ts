// Multi-node static rendezvous across a real network: two network namespaces joined by a
// veth pair stand in for two machines, one launcher (with one worker) in each. Needs root
// and `ip netns`; skipped, with the reason, where the machine does not allow it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, test } from 'node:test';
import { jsonLines, Launcher, waitGone, worker } from './workers/launch-harness.ts';

const ns = [`tsrun${process.pid}a`, `tsrun${process.pid}b`];
const addr = ['10.231.7.1', '10.231.7.2'];
const veth = [`tsv${process.pid}a`, `tsv${process.pid}b`];

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
}

function cleanup(): void {
  for (const n of ns) {
    try {
      ip('netns', 'del', n); // also removes the veth end inside it, and so the pair
    } catch {}
  }
}

/** Builds the two namespaces; returns why not when the machine does not permit it. */
function setUp(): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'creating network namespaces needs root';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return "the 'ip' command (iproute2) is not installed";
  }
  try {
    for (const n of ns) ip('netns', 'add', n);
    ip('link', 'add', veth[0], 'type', 'veth', 'peer', 'name', veth[1]);
    for (let i = 0; i < 2; i++) {
      ip('link', 'set', veth[i], 'netns', ns[i]);
      ip('-n', ns[i], 'addr', 'add', `${addr[i]}/24`, 'dev', veth[i]);
      ip('-n', ns[i], 'link', 'set', veth[i], 'up');
      ip('-n', ns[i], 'link', 'set', 'lo', 'up');
    }
    return undefined;
  } catch (e) {
    cleanup();
    const stderr = (e as { stderr?: Buffer }).stderr?.toString().trim();
    return `this machine does not permit network namespaces / veth pairs: ${stderr || (e as Error).message}`;
  }
}

const skip = setUp();
after(cleanup);

test('two nodes in separate network namespaces rendezvous and all-reduce over a veth pair', {
  skip,
}, async () => {
  const port = '29531';
  const common = [
    '--nnodes',
    '2',
    '--master-addr',
    addr[0],
    '--master-port',
    port,
    '--run-id',
    'netns',
    '--rdzv-timeout',
    '30',
  ];
  const nodes = [0, 1].map(
    (r) =>
      new Launcher([...common, '--node-rank', String(r), worker('launch-env.ts')], {
        prefix: ['ip', 'netns', 'exec', ns[r]],
      }),
  );
  try {
    const exits = await Promise.all(nodes.map((l) => l.exit(60_000)));
    for (const [r, l] of nodes.entries()) {
      assert.equal(exits[r].code, 0, l.output);
      // Gloo binds to the address that reaches node 0 (not the hostname's, often loopback).
      assert.match(l.stderr, new RegExp(`workers bind Gloo to ${addr[r].replaceAll('.', '\\.')}`));
      const [report] = jsonLines<{ env: Record<string, string>; sum: number }>(l.stdout);
      assert.equal(report.env.RANK, String(r));
      assert.equal(report.env.GROUP_RANK, String(r));
      assert.equal(report.env.WORLD_SIZE, '2');
      assert.equal(report.env.MASTER_ADDR, addr[0]);
      assert.equal(report.sum, 3);
    }
    for (const l of nodes) assert.deepEqual(await waitGone(l.marker, 5000), []);
  } finally {
    for (const l of nodes) l.kill();
  }
});

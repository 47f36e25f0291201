// Which local address workers should give Gloo on a multi-node job. Gloo's default device
// binds to whatever the machine's hostname resolves to, which is often 127.0.0.1 (then
// peers on other nodes are told to connect to loopback, and fail). PyTorch users set
// GLOO_SOCKET_IFNAME; tsrun does it for them: the address this node uses to reach
// MASTER_ADDR, unless TSDDP_GLOO_HOSTNAME or GLOO_SOCKET_IFNAME says otherwise.
import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import { isLoopback } from '../distributed/env.ts';

/** The local source address the kernel routes toward host:port (no packet is sent). */
export async function localAddressToward(host: string, port: number): Promise<string> {
  const { address, family } = await lookup(host);
  const socket = createSocket(family === 6 ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(port || 9, address, () => resolve());
    });
    return socket.address().address;
  } finally {
    socket.close();
  }
}

/** The first IPv4 (else IPv6) address of a network interface, or undefined. */
export function interfaceAddress(name: string): string | undefined {
  const addrs = networkInterfaces()[name] ?? [];
  return (addrs.find((a) => a.family === 'IPv4') ?? addrs.find((a) => a.family === 'IPv6'))?.address;
}

/**
 * TSDDP_GLOO_HOSTNAME for the workers, or undefined to leave Gloo's default (single-node
 * jobs on loopback, or the user chose already).
 */
export async function glooHostnameFor(
  masterAddr: string,
  masterPort: number,
  nnodes: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  if (env.TSDDP_GLOO_HOSTNAME || nnodes === 1 || isLoopback(masterAddr)) return undefined;
  const ifname = env.GLOO_SOCKET_IFNAME?.split(',')[0];
  if (ifname) {
    const addr = interfaceAddress(ifname);
    if (!addr) throw new Error(`GLOO_SOCKET_IFNAME=${ifname}: no such network interface with an address`);
    return addr;
  }
  return localAddressToward(masterAddr, masterPort);
}

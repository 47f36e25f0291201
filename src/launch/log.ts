// The launcher's own lines on stderr, `tsrun: ...`: a module of its own so that the agent,
// its worker group and both rendezvous handlers write them alike without importing each
// other.

/** A line from the launcher, as tsrun prints it. */
export function log(msg: string): void {
  process.stderr.write(`tsrun: ${msg}\n`);
}

// tsrun test worker (docs/reliability.md R3): rank 1 writes 25 numbered lines to stderr and exits
// with code 3, every attempt; rank 0 ignores SIGTERM (so the launcher must escalate to
// SIGKILL) and waits forever with a busy worker thread, like a DataLoader's.
import { Worker } from 'node:worker_threads';

const rank = Number(process.env.RANK);
const attempt = Number(process.env.TORCHELASTIC_RESTART_COUNT);
console.log(JSON.stringify({ rank, attempt, pid: process.pid }));
if (rank === 1) {
  setTimeout(() => {
    for (let i = 1; i <= 25; i++) console.error(`rank 1 attempt ${attempt} failure detail ${i}`);
    process.exit(3);
  }, 300);
} else {
  process.on('SIGTERM', () => console.error('rank 0 ignores SIGTERM'));
  new Worker('setInterval(() => {}, 1000)', { eval: true });
  setInterval(() => {}, 1000);
}

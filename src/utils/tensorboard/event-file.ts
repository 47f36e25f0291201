// One TensorBoard event file: TensorBoard's EventFileWriter (tensorboard/summary/writer/
// event_file_writer.py) in TypeScript. The file is named as TensorBoard names it,
// `events.out.tfevents.<seconds, 10 digits>.<host>.<pid>.<n><suffix>`, created new (never
// over an existing file), and begins with the `brain.Event:2` version event. Each event is
// one TFRecord: length (u64 LE), its masked CRC-32C (u32 LE), the serialized Event, and the
// data's masked CRC-32C. Events wait in a queue of `maxQueue` and are written when it fills,
// every `flushSecs`, and at flush() and close(); a record is written whole with one write
// call, so a reader never sees half of one unless the process dies inside write(2).
import { closeSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ensureSafeDir, openNew } from '../../files/index.ts';
import { maskedCrc32c } from './crc.ts';
import { encode } from './schema.ts';

/** An Event message as a plain object (proto field names); `wall_time` is set when added. */
export type EventObject = Record<string, unknown> & { step?: number; wall_time?: number };

/** TensorBoard's process-wide file counter: the `<n>` of the file names. */
let nextFileId = 0;

/** The TFRecord framing of one serialized record. */
export function tfRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(16 + data.length);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}

export class EventFileWriter {
  readonly logDir: string;
  readonly path: string;
  private fd: number | null;
  private queue: EventObject[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    logDir: string,
    private readonly maxQueue: number,
    private readonly flushSecs: number,
    filenameSuffix: string,
  ) {
    ensureSafeDir(logDir, 'the TensorBoard log folder');
    this.logDir = logDir;
    const seconds = String(Math.floor(Date.now() / 1000)).padStart(10, '0');
    const name = `events.out.tfevents.${seconds}.${hostname()}.${process.pid}.${nextFileId++}${filenameSuffix}`;
    this.path = join(logDir, name);
    this.fd = openNew(this.path);
    this.add({ file_version: 'brain.Event:2' });
    this.flush();
  }

  get closed(): boolean {
    return this.fd === null;
  }

  /** Queues `event` (stamped with the current time unless it has a wall_time). */
  add(event: EventObject): void {
    if (this.fd === null) throw new Error(`the event file ${this.path} is closed`);
    this.queue.push({ ...event, wall_time: event.wall_time ?? Date.now() / 1000 });
    if (this.queue.length >= this.maxQueue) this.flush();
    else if (this.timer === null && this.flushSecs > 0) {
      this.timer = setTimeout(() => this.flush(), this.flushSecs * 1000);
      this.timer.unref(); // a pending flush does not keep the process alive; close() flushes
    }
  }

  /** Writes every queued event to the file. */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.fd === null || this.queue.length === 0) return;
    const records = Buffer.concat(this.queue.map((e) => tfRecord(encode('tensorboard.Event', e))));
    this.queue = [];
    let done = 0;
    while (done < records.length) done += writeSync(this.fd, records, done, records.length - done);
  }

  /** Flushes and closes the file; further events are refused. Closing twice is a no-op. */
  close(): void {
    if (this.fd === null) return;
    this.flush();
    closeSync(this.fd);
    this.fd = null;
  }
}

// Reads TensorBoard event files back for the tests: each TFRecord's length and data
// checked against their masked CRC-32C, each Event decoded with tsddp's schema
// (src/utils/tensorboard/schema.ts; TensorBoard's own reader checks them too, in
// test/tensorboard.test.ts).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { maskedCrc32c } from '../../src/utils/tensorboard/crc.ts';
import { messageType } from '../../src/utils/tensorboard/schema.ts';

const EVENT = messageType('tensorboard.Event');

export type Event = Record<string, unknown> & {
  step?: number;
  wall_time: number;
  summary?: { value: Record<string, unknown>[] };
};

/** The events of one file, in order. */
export function readEvents(file: string): Event[] {
  const buf = readFileSync(file);
  const events: Event[] = [];
  for (let at = 0; at < buf.length; ) {
    const len = Number(buf.readBigUInt64LE(at));
    assert.equal(buf.readUInt32LE(at + 8), maskedCrc32c(buf.subarray(at, at + 8)), `length CRC at ${at}`);
    const data = buf.subarray(at + 12, at + 12 + len);
    assert.equal(buf.readUInt32LE(at + 12 + len), maskedCrc32c(data), `data CRC at ${at}`);
    events.push(EVENT.toObject(EVENT.decode(data), { longs: Number, bytes: Buffer, enums: String }) as Event);
    at += 16 + len;
  }
  return events;
}

/** The event files directly in `dir`. */
export function eventFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith('events.out.tfevents.'))
    .map((f) => join(dir, f));
}

/** [step, value] of every scalar event with `tag` (proto3 leaves out a step of 0). */
export function scalars(events: Event[], tag: string): [number, number][] {
  return events
    .filter((e) => e.summary?.value[0].tag === tag)
    .map((e) => [e.step ?? 0, e.summary?.value[0].simple_value as number]);
}

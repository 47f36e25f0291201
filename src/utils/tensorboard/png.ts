// A PNG encoder for SummaryWriter.addImage: 8-bit RGB or RGBA rows,
// no filtering, zlib-deflated (PNG spec, ISO/IEC 15948). It exists because PyTorch's
// add_image is synchronous and sharp, tsddp's image library, encodes only asynchronously;
// sharp decodes these files in the tests, and TensorBoard's PIL in the fixture.
import { deflateSync } from 'node:zlib';
import { crc32 } from './crc.ts';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** PNG bytes of `pixels`: `height` rows of `width` pixels of `channels` (3 RGB, 4 RGBA) bytes. */
export function encodePng(pixels: Uint8Array, width: number, height: number, channels: 3 | 4): Buffer {
  const stride = width * channels;
  if (pixels.length !== stride * height)
    throw new Error(`encodePng: ${pixels.length} bytes for ${height}x${width}x${channels}`);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bits per sample
  header[9] = channels === 3 ? 2 : 6; // colour type: truecolour, truecolour with alpha
  const raw = Buffer.alloc((stride + 1) * height); // each row: filter byte 0, then its pixels
  for (let y = 0; y < height; y++)
    raw.set(pixels.subarray(y * stride, (y + 1) * stride), y * (stride + 1) + 1);
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', new Uint8Array()),
  ]);
}

// The two CRCs of the files TensorBoard reads: CRC-32C (Castagnoli), the checksum of
// TFRecord framing, with TensorFlow's masking (tensorflow/core/lib/hash/crc32c.h: a CRC
// stored beside the data it covers is masked so that a CRC of bytes holding CRCs stays well
// distributed), and CRC-32 (ISO-HDLC), the checksum of PNG chunks. Table-driven: records
// and images are small and written one at a time.

function table(reflectedPolynomial: number): Uint32Array {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? reflectedPolynomial ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
}

const CASTAGNOLI = table(0x82f63b78);
const ISO_HDLC = table(0xedb88320);

function crc(t: Uint32Array, bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = t[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** CRC-32C of `bytes` ("123456789" gives 0xe3069283). */
export const crc32c = (bytes: Uint8Array): number => crc(CASTAGNOLI, bytes);

/** CRC-32 of `bytes`, as zlib and PNG compute it ("123456789" gives 0xcbf43926). */
export const crc32 = (bytes: Uint8Array): number => crc(ISO_HDLC, bytes);

/** TensorFlow's masked CRC-32C: rotated right by 15 bits plus a constant. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return (((c >>> 15) | (c << 17)) + 0xa282ead8) >>> 0;
}

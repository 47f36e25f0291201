// tsddp_image.node (native/image): the data workers' image kernels in C++ — libjpeg-turbo
// JPEG decoding with PIL's settings (~4x cheaper per image than a sharp call) and the
// fused resized crop + flip + ToTensor + Normalize (the twin of resizeHwc in
// transforms/image.ts). A separate addon from tsddp.node, without libtorch, so worker
// threads load it in a few ms. Optional: without it (no libjpeg headers at build time,
// or TSDDP_IMAGE_ADDON=0) ImageFolder decodes with sharp and transforms in JavaScript,
// to the same bytes, more slowly.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export type JpegResult = { data: ArrayBuffer; width: number; height: number } | string;

export interface ImageAddon {
  /** uint8 RGB pixels, or the reason this decoder does not handle the file. */
  decodeJpeg(bytes: Uint8Array): JpegResult;
  /** The same on libuv's thread pool; `bytes` must not change until it settles. */
  decodeJpegAsync(bytes: Uint8Array): Promise<JpegResult>;
  jpegVersion: string;
  /** See resizeHwc in transforms/image.ts; `tables` is channels x 256 float32 or null (uint8 out). */
  resizeHwc(
    src: Uint8Array,
    shape: [number, number, number],
    window: [number, number, number, number],
    size: [number, number],
    flip: boolean,
    tables: Float32Array | null,
    out: Uint8Array | Float32Array,
  ): void;
}

const addonPath = new URL('../../native/build/Release/tsddp_image.node', import.meta.url);
let addon: ImageAddon | null | undefined;

/** The addon, or null when it is not built or turned off (TSDDP_IMAGE_ADDON=0). */
export function imageAddon(): ImageAddon | null {
  if (addon !== undefined) return addon;
  addon = null;
  if (process.env.TSDDP_IMAGE_ADDON !== '0') {
    try {
      addon = createRequire(import.meta.url)(fileURLToPath(addonPath)) as ImageAddon;
    } catch {
      // not built: sharp and the JavaScript transforms do the work
    }
  }
  return addon;
}

/** JPEG files start with an SOI marker followed by another marker. */
export function isJpeg(bytes: Uint8Array): boolean {
  return bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
}

/** Which decoder ImageFolder uses for JPEG files (benchmark and README reports). */
export function jpegDecoderName(): string {
  return imageAddon()?.jpegVersion ?? 'sharp';
}

// SVG -> PNG with sharp (librsvg inside libvips): no browser, no system packages. The PNG is
// written beside its destination and renamed over it, so a reader never sees half a file.
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import sharp from 'sharp';

export async function svgToPng(svg: string, file: string): Promise<void> {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp${process.pid}`;
  try {
    await sharp(Buffer.from(svg)).png({ compressionLevel: 9 }).toFile(tmp);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}

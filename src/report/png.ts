// SVG -> PNG with sharp (librsvg inside libvips): no browser, no system packages. The PNG is
// written beside its destination and renamed over it (src/files), so a reader never sees
// half a file.
import { dirname } from 'node:path';
import sharp from 'sharp';
import { ensureSafeDir, writeFileAtomicSync } from '../files/index.ts';

export async function svgToPng(svg: string, file: string): Promise<void> {
  ensureSafeDir(dirname(file), 'the chart folder');
  writeFileAtomicSync(file, await sharp(Buffer.from(svg)).png({ compressionLevel: 9 }).toBuffer());
}

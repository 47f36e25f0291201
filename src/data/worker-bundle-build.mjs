// Builds the pre-built data worker (see worker-bundle.ts), in a child process because
// esbuild runs plugins only in its async API. Each module keeps its own import.meta.url —
// its source file's URL — so paths computed from it (the JPEG addon, built-in module
// names) are those of the unbundled code. That URL is written relative to the bundle's
// own, so a bundle built into the package (scripts/build.mjs) works wherever it is installed.
//   node worker-bundle-build.mjs <entry.ts|.js> <root dir> <bundle dir>
//     → prints {code, inputs} as JSON on stdout (the bundle and the files it was built from)
import { readFile } from 'node:fs/promises';
import { extname, relative } from 'node:path';
import { build } from 'esbuild';

const [entry, root, bundleDir] = process.argv.slice(2);
const sourceImportMetaUrl = {
  name: 'source-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.(ts|js)$/ }, async ({ path }) => {
      if (path.includes('/node_modules/')) return undefined;
      const rel = JSON.stringify(relative(bundleDir, path));
      return {
        contents: (await readFile(path, 'utf8')).replaceAll(
          'import.meta.url',
          `new URL(${rel}, import.meta.url).href`,
        ),
        loader: extname(path) === '.ts' ? 'ts' : 'js',
      };
    });
  },
};
const result = await build({
  entryPoints: [entry],
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Packages (sharp, tsx) are imported from node_modules at run time, as the sources do.
  packages: 'external',
  // Class and function names as in the sources: error names and isClass() depend on them.
  keepNames: true,
  sourcemap: 'inline',
  sourcesContent: false,
  write: false,
  metafile: true,
  logLevel: 'error',
  plugins: [sourceImportMetaUrl],
});
process.stdout.write(
  JSON.stringify({ code: result.outputFiles[0].text, inputs: Object.keys(result.metafile.inputs) }),
);

// Builds the pre-built data worker (see worker-bundle.ts), in a child process because
// esbuild runs plugins only in its async API. Each module keeps its own import.meta.url —
// its source file's URL — so paths computed from it (the JPEG addon, built-in module
// names) are those of the unbundled code.
//   node worker-bundle-build.mjs <entry.ts> <root dir>   → prints the metafile's inputs as JSON on stdout
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const [entry, root] = process.argv.slice(2);
const sourceImportMetaUrl = {
  name: 'source-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async ({ path }) => ({
      contents: (await readFile(path, 'utf8')).replaceAll(
        'import.meta.url',
        JSON.stringify(pathToFileURL(path).href),
      ),
      loader: 'ts',
    }));
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

// Where a module's sibling files are, whether tsddp runs from its TypeScript sources (a
// checkout, through tsx) or from the compiled package (dist/, plain JavaScript). Paths in
// the sources name `.ts` files; the compiler rewrites import specifiers to `.js`, but not
// a URL built from a string, so these helpers do it. No imports: data worker threads load
// this without libtorch.

/** True when the calling module (its `import.meta.url`) is compiled JavaScript. */
export function isCompiled(importMetaUrl: string): boolean {
  return /\.[cm]?js$/.test(new URL(importMetaUrl).pathname);
}

/**
 * The URL of the module `specifier` (written with its source name, `./worker.ts`) next to
 * the module `importMetaUrl`: `./worker.js` when the caller itself is compiled.
 */
export function siblingModule(specifier: string, importMetaUrl: string): URL {
  const url = new URL(specifier, importMetaUrl);
  if (isCompiled(importMetaUrl)) url.pathname = url.pathname.replace(/\.ts$/, '.js');
  return url;
}

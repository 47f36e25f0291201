#!/usr/bin/env node
// The `tsddp` command. The installed package runs its compiled JavaScript (dist/); a
// checkout of the repository runs the TypeScript sources through tsx, with no build step.
import { existsSync } from 'node:fs';
import { fatal } from './fatal.mjs';

const source = new URL('../src/cli/main.ts', import.meta.url);
try {
  if (existsSync(source)) {
    (await import('tsx/esm/api')).register();
    await import(source.href);
  } else {
    await import('../dist/cli/main.js');
  }
} catch (e) {
  fatal(e);
}

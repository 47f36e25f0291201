#!/usr/bin/env node
// `tsrun`: the same as `tsddp run` (the torchrun-compatible launcher), as its own command.
// Compiled JavaScript in the installed package; the TypeScript sources in a checkout.
import { existsSync } from 'node:fs';
import { fatal } from './fatal.mjs';

const source = new URL('../src/cli/run.ts', import.meta.url);
try {
  let run;
  if (existsSync(source)) {
    (await import('tsx/esm/api')).register();
    run = await import(source.href);
  } else {
    run = await import('../dist/cli/run.js');
  }
  await run.runCommand('tsrun').parseAsync(process.argv);
} catch (e) {
  fatal(e);
}

#!/usr/bin/env node
// `tsrun`: the same as `tsddp run` (the torchrun-compatible launcher), as its own command.
import { register } from 'tsx/esm/api';

register();
const { runCommand } = await import('../src/cli/run.ts');
await runCommand('tsrun').parseAsync(process.argv);

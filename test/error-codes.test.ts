// One error base (docs/errors.md): every error class in src/ extends TsddpError, carries a
// stable `code`, and is listed in docs/errors.md with that code.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as t from '../src/index.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Every `class X extends Y` in src/ whose name ends in Error, with its base. */
function errorClasses(): { name: string; base: string; file: string }[] {
  const out: { name: string; base: string; file: string }[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts'))
        for (const m of readFileSync(p, 'utf8').matchAll(/class (\w+Error) extends (\w+)/g))
          out.push({ name: m[1], base: m[2], file: p.slice(ROOT.length) });
    }
  };
  walk(join(ROOT, 'src'));
  return out;
}

test('every error class in src/ extends TsddpError (directly or through another tsddp error)', () => {
  const classes = errorClasses();
  assert.ok(classes.length >= 25, `found ${classes.length}`);
  const names = new Set(classes.map((c) => c.name));
  for (const c of classes.filter((x) => x.name !== 'TsddpError'))
    assert.ok(
      c.base === 'TsddpError' || names.has(c.base),
      `${c.file}: ${c.name} extends ${c.base}, not TsddpError`,
    );
});

test('docs/errors.md lists every error class with the codes it can carry', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
  const rows = new Map(
    [...doc.matchAll(/^\|\s*`(\w+Error)`\s*\|([^|]+)\|/gm)].map((m) => [
      m[1],
      [...m[2].matchAll(/`(\w+)`/g)].map((c) => c[1]),
    ]),
  );
  for (const c of errorClasses().filter((x) => x.name !== 'TsddpError'))
    assert.ok(rows.has(c.name), `docs/errors.md has no row for ${c.name}`);
  // Instances carry their row's code.
  const made: t.TsddpError[] = [
    new t.TorchError('aten::add', 'boom'),
    new t.UnsafePathError('/x', 'unsafe'),
    new t.PriorRunError('earlier run'),
    new t.ConfigError('bad', ['bad']),
    new t.PreflightError('no room'),
    new t.data.DataError('unreadable', '/x'),
    new t.CheckpointError('CORRUPT', '/x', 'flipped'),
    new t.distributed.DistributedError('peer gone', 'allreduce', 1),
  ];
  for (const e of made) {
    assert.ok(e instanceof t.TsddpError && e instanceof Error);
    assert.ok(
      rows.get(e.name)?.includes(e.code),
      `${e.name}: code ${e.code} is not in its docs/errors.md row`,
    );
  }
});

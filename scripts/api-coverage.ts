// How much of PyTorch's public surface tsddp has, namespace by namespace: PyTorch's own
// lists (test/fixtures/api/torch_names.json, made by torch_names.py beside it) against
// what tsddp exports under PyTorch's names in camelCase (log_softmax -> logSoftmax; in-place
// add_ stays add_). Prints the markdown table the README shows; --missing lists the names
// tsddp lacks. test/api-coverage.test.ts checks the README's table against this.
//
//   node --import tsx scripts/api-coverage.ts [--missing]
import { readFileSync } from 'node:fs';
import * as t from '../src/index.ts';

interface TorchNames {
  torch: string;
  names: Record<string, string[]>;
}

export interface Coverage {
  namespace: string;
  /** Where tsddp has it. */
  tsddp: string;
  total: number;
  present: string[];
  missing: string[];
}

/** PyTorch's snake_case name as tsddp spells it. */
export function camelName(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function hasKey(obj: object, name: string): boolean {
  return name in obj && (obj as Record<string, unknown>)[name] !== undefined;
}

/** Each PyTorch namespace, the tsddp object that mirrors it, and how a name is found there. */
const NAMESPACES: Record<string, [string, (name: string) => boolean]> = {
  torch: ['`t`', (n) => hasKey(t, n)],
  'torch.Tensor': ['`t.Tensor`', (n) => n in t.Tensor.prototype],
  'torch.nn': ['`t.nn`', (n) => hasKey(t.nn, n)],
  'torch.nn.functional': ['`t.nn.functional`', (n) => hasKey(t.nn.functional, n)],
  'torch.optim': ['`t.optim`', (n) => hasKey(t.optim, n)],
  'torch.optim.lr_scheduler': ['`t.optim.lrScheduler`', (n) => hasKey(t.optim.lrScheduler, n)],
  'torch.utils.data': ['`t.data`', (n) => hasKey(t.data, n)],
  'torch.distributed': ['`t.distributed`', (n) => hasKey(t.distributed, n)],
};

export function torchNames(): TorchNames {
  return JSON.parse(
    readFileSync(new URL('../test/fixtures/api/torch_names.json', import.meta.url), 'utf8'),
  ) as TorchNames;
}

export function coverage(names: TorchNames = torchNames()): Coverage[] {
  return Object.entries(NAMESPACES).map(([namespace, [tsddp, has]]) => {
    const all = names.names[namespace] ?? [];
    const present = all.filter((n) => has(camelName(n)));
    const missing = all.filter((n) => !has(camelName(n)));
    return { namespace, tsddp, total: all.length, present, missing };
  });
}

/** The README's table. */
export function coverageTable(rows: Coverage[], torchVersion: string): string {
  const lines = [
    `| PyTorch ${torchVersion} namespace | in tsddp | names PyTorch lists | tsddp has | share |`,
    '| --- | --- | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const share = r.total === 0 ? '—' : `${Math.round((100 * r.present.length) / r.total)}%`;
    lines.push(`| \`${r.namespace}\` | ${r.tsddp} | ${r.total} | ${r.present.length} | ${share} |`);
  }
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const names = torchNames();
  const rows = coverage(names);
  console.log(coverageTable(rows, names.torch));
  if (process.argv.includes('--missing')) {
    for (const r of rows)
      console.log(`\n${r.namespace} (${r.missing.length} missing):\n${r.missing.join(' ')}`);
  }
}

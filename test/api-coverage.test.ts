// The README's table of how much of PyTorch's surface tsddp has is computed, not typed:
// it must equal what scripts/api-coverage.ts counts from PyTorch's own lists
// (test/fixtures/api/torch_names.json) against tsddp's exports.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { camelName, coverage, coverageTable, torchNames } from '../scripts/api-coverage.ts';

/** A markdown table's cells without the padding a formatter adds. */
function normalize(markdown: string): string {
  return markdown
    .split('\n')
    .map((line) =>
      line.trim().startsWith('|')
        ? line
            .split('|')
            .map((cell) => cell.trim().replace(/^-{3,}(:?)$/, '---$1'))
            .join('|')
        : line,
    )
    .join('\n');
}

test("the README's coverage table is the one computed from PyTorch's lists", () => {
  const names = torchNames();
  const table = coverageTable(coverage(names), names.torch);
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  assert.ok(
    normalize(readme).includes(normalize(table)),
    `README.md should hold this table (npm run api:coverage):\n${table}`,
  );
});

test('names are matched as tsddp spells them', () => {
  assert.equal(camelName('log_softmax'), 'logSoftmax');
  assert.equal(camelName('add_'), 'add_');
  assert.equal(camelName('binary_cross_entropy_with_logits'), 'binaryCrossEntropyWithLogits');
  assert.equal(camelName('mT'), 'mT');
  const rows = coverage();
  const nn = rows.find((r) => r.namespace === 'torch.nn');
  assert.ok(nn?.present.includes('Conv2d') && nn.present.includes('BatchNorm2d'));
  const fn = rows.find((r) => r.namespace === 'torch.nn.functional');
  assert.ok(fn?.present.includes('cross_entropy'), 'F.cross_entropy is t.nn.functional.crossEntropy');
  for (const r of rows) assert.equal(r.present.length + r.missing.length, r.total);
});

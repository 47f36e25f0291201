// The nanoGPT of the FSDP fixtures (test/fixtures/distributed/fsdp.py and hsdp.py: vocab 32,
// block 8, 2 layers, 2 heads, width 16, no dropout, biases), for the workers that train it.
import * as t from '../../src/index.ts';
import { type FixtureTensor, toTensor } from './fixtures.ts';

export const FIXTURE_GPT = {
  vocabSize: 32,
  blockSize: 8,
  nLayer: 2,
  nHead: 2,
  nEmbd: 16,
  dropout: 0,
  bias: true,
};

/** That GPT with a fixture's initial state (PyTorch's, from torch.manual_seed(0)). */
export function fixtureGpt(init: Record<string, FixtureTensor>): t.models.GPT {
  const gpt = new t.models.GPT(FIXTURE_GPT);
  gpt.loadStateDict(Object.fromEntries(Object.entries(init).map(([k, v]) => [k, toTensor(v)])));
  return gpt;
}

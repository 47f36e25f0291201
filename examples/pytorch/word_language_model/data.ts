// word_language_model/data.py: a Dictionary of the words seen, and a Corpus that turns
// train.txt, valid.txt and test.txt of a folder into int64 tensors of word ids (each line
// ends with <eos>).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as t from '../../../src/index.ts';

export class Dictionary {
  word2idx = new Map<string, number>();
  idx2word: string[] = [];

  addWord(word: string): number {
    if (!this.word2idx.has(word)) {
      this.idx2word.push(word);
      this.word2idx.set(word, this.idx2word.length - 1);
    }
    return this.word2idx.get(word) as number;
  }

  get length(): number {
    return this.idx2word.length;
  }
}

export class Corpus {
  dictionary = new Dictionary();
  train: t.Tensor;
  valid: t.Tensor;
  test: t.Tensor;

  constructor(path: string) {
    this.train = this.tokenize(join(path, 'train.txt'));
    this.valid = this.tokenize(join(path, 'valid.txt'));
    this.test = this.tokenize(join(path, 'test.txt'));
  }

  /** Tokenizes a text file. */
  tokenize(path: string): t.Tensor {
    if (!existsSync(path))
      throw new Error(`${path}: no such file (the corpus folder holds train.txt, valid.txt, test.txt)`);
    const lines = readFileSync(path, 'utf8').split('\n');
    if (lines.at(-1) === '') lines.pop(); // Python's `for line in f` yields no line after the last newline
    const ids: number[] = [];
    // Add words to the dictionary, and tokenize the file's content.
    for (const line of lines)
      for (const word of [...line.split(/\s+/).filter(Boolean), '<eos>'])
        ids.push(this.dictionary.addWord(word));
    return t.tensor(ids, { dtype: 'int64' }).keep();
  }
}

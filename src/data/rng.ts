// The random streams of data workers and augmentations: plain JS (workers do not load the
// native addon), small, fast and reproducible. xoshiro128** 1.1 (Blackman & Vigna, public
// domain) is the generator: 128-bit state, 32-bit output, only 32-bit integer operations,
// which JS does exactly with Math.imul and >>> — and it passes BigCrush. Its state is
// filled by hashing the seed words with SplitMix32-style finalisers (murmur3's fmix32),
// so nearby seeds (sample 7 vs sample 8) give unrelated streams. We chose a few lines
// over an npm package: the popular ones (seedrandom, pure-rand) are larger, and tying the
// augmentation stream to a dependency's version would make it harder to keep fixed.

/** murmur3's 32-bit finaliser: a bijective avalanche mix. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const GOLDEN = 0x9e3779b9;

/** Splits a seed word (a safe integer, negative numbers or a bigint up to 64 bits) into two uint32. */
function words(x: number | bigint): [number, number] {
  if (typeof x === 'bigint') {
    const v = BigInt.asUintN(64, x);
    return [Number(v & 0xffffffffn), Number(v >> 32n)];
  }
  if (!Number.isSafeInteger(x)) throw new TypeError(`Rng: seed words must be integers, got ${x}`);
  const lo = x >>> 0;
  // Math.floor keeps negative numbers' two's complement high word.
  const hi = Math.floor(x / 0x100000000) >>> 0;
  return [lo, hi];
}

/** A seeded random stream (xoshiro128**). Same seed words, same numbers, on every thread and machine. */
export class Rng {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  /** A stream determined by the seed words, e.g. `new Rng(baseSeed, sampleIndex, position)`. */
  constructor(...seed: (number | bigint)[]) {
    let h = GOLDEN;
    for (const w of seed) {
      const [lo, hi] = words(w);
      h = fmix32((h ^ lo) + GOLDEN);
      h = fmix32((h ^ hi) + GOLDEN);
    }
    h = fmix32(h ^ seed.length);
    // SplitMix32 expansion of the hash into the 128-bit state.
    const next = (): number => {
      h = (h + GOLDEN) >>> 0;
      return fmix32(h);
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1; // the one forbidden state
  }

  /** A stream with exactly this xoshiro128** state (for tests against the reference implementation). */
  static fromState(state: [number, number, number, number]): Rng {
    const r = new Rng();
    [r.s0, r.s1, r.s2, r.s3] = state.map((x) => x >>> 0);
    return r;
  }

  /** The next 32 random bits as an unsigned integer. */
  uint32(): number {
    const s1 = this.s1;
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** A float in [0, 1) with 53 random bits. */
  random(): number {
    const hi = this.uint32() >>> 5; // 27 bits
    const lo = this.uint32() >>> 6; // 26 bits
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** A float in [low, high). */
  uniform(low: number, high: number): number {
    return low + (high - low) * this.random();
  }

  /** An integer in [low, high) (high exclusive, like torch.randint), without modulo bias. */
  int(low: number, high: number): number {
    const span = high - low;
    if (!(span >= 1) || !Number.isInteger(span) || span > 0x100000000) {
      throw new RangeError(
        `Rng.int(): need integers low < high with high - low <= 2^32, got [${low}, ${high})`,
      );
    }
    // Rejection sampling on the top of the 32-bit range keeps every value equally likely.
    const limit = 0x100000000 - (0x100000000 % span);
    let x = this.uint32();
    while (x >= limit) x = this.uint32();
    return low + (x % span);
  }

  /** true with probability p. */
  bool(p = 0.5): boolean {
    return this.random() < p;
  }

  /** A standard normal sample (Box–Muller). */
  normal(mean = 0, std = 1): number {
    let u = this.random();
    while (u === 0) u = this.random();
    const v = this.random();
    return mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

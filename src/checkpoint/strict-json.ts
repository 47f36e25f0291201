// A strict JSON parser for untrusted headers. JSON.parse silently keeps the last of two
// equal keys and rounds big integers; the safetensors spec forbids duplicate keys and
// offsets/shapes are u64, so this parser rejects duplicates, returns integer literals as
// bigint (exact), limits nesting depth (no stack exhaustion from `[[[[...`), and builds
// objects as Maps (no `__proto__` surprises).
import { TsddpError } from '../errors/index.ts';

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | JsonObject;
export type JsonObject = Map<string, JsonValue>;

export class JsonSyntaxError extends TsddpError {
  override name = 'JsonSyntaxError';
  readonly code = 'JSON_SYNTAX';
  constructor(
    message: string,
    readonly duplicateKey?: string,
  ) {
    super(message);
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Parses `text` (already decoded) as one JSON value followed only by whitespace. */
export function parseStrictJson(text: string, maxDepth = 64): JsonValue {
  const s = new Scanner(text, maxDepth);
  const value = s.value(0);
  s.skipWs();
  if (s.i !== text.length) s.fail('unexpected data after the JSON value');
  return value;
}

/** A cursor over the text; each reader starts at its token and leaves `i` just past it. */
class Scanner {
  i = 0;

  constructor(
    readonly text: string,
    readonly maxDepth: number,
  ) {}

  /** Throws a JsonSyntaxError naming the current position. */
  fail(what: string): never {
    throw new JsonSyntaxError(`${what} at character ${this.i}`);
  }

  /** Skips JSON whitespace (space, tab, LF, CR; nothing else). */
  skipWs(): void {
    const text = this.text;
    for (;;) {
      const c = text.charCodeAt(this.i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.i++;
      else return;
    }
  }

  /** Reads any value after optional whitespace; `depth` counts the enclosing arrays and objects. */
  value(depth: number): JsonValue {
    this.skipWs();
    const c = this.text[this.i];
    if (c === '{' || c === '[') {
      // Checked before descending, so hostile nesting cannot exhaust the stack.
      if (depth >= this.maxDepth) this.fail(`nesting deeper than ${this.maxDepth}`);
      this.i++;
      this.skipWs();
      return c === '[' ? this.array(depth) : this.object(depth);
    }
    if (c === '"') return this.string();
    if (this.take('true')) return true;
    if (this.take('false')) return false;
    if (this.take('null')) return null;
    return this.number();
  }

  /** Reads an array's elements and `]`; the caller consumed `[` and the whitespace after it. */
  array(depth: number): JsonValue[] {
    const text = this.text;
    const arr: JsonValue[] = [];
    if (text[this.i] === ']') {
      this.i++;
      return arr;
    }
    for (;;) {
      arr.push(this.value(depth + 1));
      this.skipWs();
      if (text[this.i] === ',') this.i++;
      else if (text[this.i] === ']') {
        this.i++;
        return arr;
      } else this.fail("expected ',' or ']'");
    }
  }

  /** Reads an object's members and `}` into a Map, refusing duplicate keys; `{` is consumed. */
  object(depth: number): JsonObject {
    const text = this.text;
    const obj: JsonObject = new Map();
    if (text[this.i] === '}') {
      this.i++;
      return obj;
    }
    for (;;) {
      this.skipWs();
      if (text[this.i] !== '"') this.fail('expected a string key');
      const at = this.i;
      const key = this.string();
      if (obj.has(key)) {
        throw new JsonSyntaxError(`duplicate key ${JSON.stringify(key)} at character ${at}`, key);
      }
      this.skipWs();
      if (text[this.i] !== ':') this.fail("expected ':'");
      this.i++;
      obj.set(key, this.value(depth + 1));
      this.skipWs();
      if (text[this.i] === ',') this.i++;
      else if (text[this.i] === '}') {
        this.i++;
        return obj;
      } else this.fail("expected ',' or '}'");
    }
  }

  /** Reads a string literal, decoding escapes; the caller checked that `text[i]` is `"`. */
  string(): string {
    const text = this.text;
    this.i++;
    let out = '';
    let start = this.i;
    for (;;) {
      if (this.i >= text.length) this.fail('unterminated string');
      const c = text.charCodeAt(this.i);
      if (c === 0x22) {
        out += text.slice(start, this.i);
        this.i++;
        break;
      }
      if (c < 0x20) this.fail('control character in string');
      if (c !== 0x5c) {
        this.i++;
        continue;
      }
      out += text.slice(start, this.i) + this.escape();
      start = this.i;
    }
    // Escapes can spell lone surrogates, which no UTF-8 writer can reproduce.
    if (hasLoneSurrogate(out)) this.fail('lone surrogate in string');
    return out;
  }

  /** Decodes the escape sequence at `i` (a backslash) and moves past it. */
  escape(): string {
    const e = this.text[this.i + 1];
    this.i += 2;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        return e;
      case 'b':
        return '\b';
      case 'f':
        return '\f';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'u': {
        const hex = this.text.slice(this.i, this.i + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('bad \\u escape');
        this.i += 4;
        return String.fromCharCode(Number.parseInt(hex, 16));
      }
      default:
        // Name the backslash, not the character after it.
        this.i -= 2;
        return this.fail('bad escape');
    }
  }

  /** Consumes `word` (a keyword: true, false, null) if it is at `i`; says whether it did. */
  take(word: string): boolean {
    if (!this.text.startsWith(word, this.i)) return false;
    this.i += word.length;
    return true;
  }

  /** Reads a number: integer literals as exact bigints, the rest as finite doubles. */
  number(): number | bigint {
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.text);
    if (m === null) return this.fail('unexpected token');
    this.i += m[0].length;
    const isInteger = m[1] === undefined && !/[eE]/.test(m[0]);
    // `-0` is no integer to Rust's serde_json (the reference parser): it reads it as the
    // float -0.0, so a u64 field holding it is refused. Returning the number -0 (not the
    // bigint 0n, which has no sign) lets integer-only fields refuse it the same way.
    if (m[0] === '-0') return -0;
    if (isInteger) return BigInt(m[0]);
    const n = Number(m[0]);
    if (!Number.isFinite(n)) this.fail('number out of range');
    return n;
  }
}

/** A parsed value as ordinary JS data: Maps become plain objects, bigints become numbers. */
export function toPlain(v: JsonValue): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(toPlain);
  if (v instanceof Map) {
    // Object.fromEntries defines own properties, so a "__proto__" key stays a plain key.
    return Object.fromEntries([...v].map(([k, x]) => [k, toPlain(x)]));
  }
  return v;
}

export function hasLoneSurrogate(s: string): boolean {
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(k + 1);
      if (d >= 0xdc00 && d <= 0xdfff) k++;
      else return true;
    } else if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

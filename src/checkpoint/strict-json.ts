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
  let i = 0;
  const fail = (what: string): never => {
    throw new JsonSyntaxError(`${what} at character ${i}`);
  };
  const skipWs = (): void => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else return;
    }
  };
  const parseString = (): string => {
    // Caller checked text[i] === '"'.
    i++;
    let out = '';
    let start = i;
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        break;
      }
      if (c < 0x20) fail('control character in string');
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          const hex = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad \\u escape');
          out += String.fromCharCode(Number.parseInt(hex, 16));
          i += 4;
          break;
        }
        default:
          i -= 2;
          fail('bad escape');
      }
      start = i;
    }
    // Escapes can spell lone surrogates, which no UTF-8 writer can reproduce.
    if (hasLoneSurrogate(out)) fail('lone surrogate in string');
    return out;
  };
  const parseValue = (depth: number): JsonValue => {
    skipWs();
    const c = text[i];
    if (c === '{' || c === '[') {
      if (depth >= maxDepth) fail(`nesting deeper than ${maxDepth}`);
      i++;
      skipWs();
      if (c === '[') {
        const arr: JsonValue[] = [];
        if (text[i] === ']') {
          i++;
          return arr;
        }
        for (;;) {
          arr.push(parseValue(depth + 1));
          skipWs();
          if (text[i] === ',') i++;
          else if (text[i] === ']') {
            i++;
            return arr;
          } else fail("expected ',' or ']'");
        }
      }
      const obj: JsonObject = new Map();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        skipWs();
        if (text[i] !== '"') fail('expected a string key');
        const at = i;
        const key = parseString();
        if (obj.has(key)) {
          throw new JsonSyntaxError(`duplicate key ${JSON.stringify(key)} at character ${at}`, key);
        }
        skipWs();
        if (text[i] !== ':') fail("expected ':'");
        i++;
        obj.set(key, parseValue(depth + 1));
        skipWs();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return obj;
        } else fail("expected ',' or '}'");
      }
    }
    if (c === '"') return parseString();
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) return fail('unexpected token');
    i += m[0].length;
    const isInteger = m[1] === undefined && !/[eE]/.test(m[0]);
    // `-0` is no integer to Rust's serde_json (the reference parser): it reads it as the
    // float -0.0, so a u64 field holding it is refused. Returning the number -0 (not the
    // bigint 0n, which has no sign) lets integer-only fields refuse it the same way.
    if (m[0] === '-0') return -0;
    if (isInteger) return BigInt(m[0]);
    const n = Number(m[0]);
    if (!Number.isFinite(n)) fail('number out of range');
    return n;
  };
  const value = parseValue(0);
  skipWs();
  if (i !== text.length) fail('unexpected data after the JSON value');
  return value;
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

// Generates src/core/ops.generated.ts: typed wrappers for the ops in op-list.ts, from the
// schemas the installed libtorch registers with its dispatcher. Run: npm run gen:ops
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { OpArgSchema, OpSchema } from '../src/core/native.ts';
import { native } from '../src/core/native.ts';
import { NO_METHOD, OPS, RENAMED_FUNCTIONS, VARARGS_FUNCTIONS, VARARGS_METHODS } from './op-list.ts';

const OUT = fileURLToPath(new URL('../src/core/ops.generated.ts', import.meta.url));

const camel = (s: string) => {
  const lead = s.match(/^_*/)![0];
  const trail = s.endsWith('_') ? '_' : '';
  const core = s.slice(lead.length, s.length - trail.length);
  return lead + core.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) + trail;
};

const baseType = (a: OpArgSchema) => a.type.replace(/\?$/, '');
const isDType = (a: OpArgSchema) => baseType(a) === 'ScalarType';
const isMemoryFormat = (a: OpArgSchema) => baseType(a) === 'MemoryFormat';
const isLayout = (a: OpArgSchema) => baseType(a) === 'Layout';

function tsType(a: OpArgSchema): string {
  let t: string;
  if (isDType(a)) t = 'DTypeName';
  else if (isMemoryFormat(a)) t = 'MemoryFormat';
  else if (isLayout(a)) t = 'number';
  else {
    t = {
      Tensor: 'Tensor',
      'Tensor[]': 'Tensor[]',
      'Tensor?[]': '(Tensor | null)[]',
      int: 'number',
      'int[]': a.fixedLength ? 'number | number[]' : 'number[]',
      float: 'number',
      'float[]': 'number[]',
      bool: 'boolean',
      'bool[]': 'boolean[]',
      Scalar: 'Scalar',
      'Scalar[]': 'Scalar[]',
      str: 'string',
      Device: 'DeviceLike',
      Generator: 'Generator',
    }[a.kind]!;
  }
  return a.optional ? `${t} | null` : t;
}

// Ranks kinds so that, among overloads with equally many positional parameters, the one
// expecting the narrower JS value is tried first (Tensor before Scalar, int before int[]).
const KIND_RANK: Record<string, number> = {
  Tensor: 0,
  int: 1,
  bool: 2,
  float: 3,
  Scalar: 4,
  str: 5,
  Device: 6,
  Generator: 7,
  'Tensor[]': 8,
  'Tensor?[]': 9,
  'int[]': 10,
  'float[]': 11,
  'bool[]': 12,
  'Scalar[]': 13,
};

function predicate(a: OpArgSchema, v: string, missingOk = a.optional || a.hasDefault): string {
  let p: string;
  if (isDType(a) || isMemoryFormat(a)) p = `typeof ${v} === 'string'`;
  else {
    p = {
      Tensor: `${v} instanceof Tensor`,
      'Tensor[]': `isTensorList(${v})`,
      'Tensor?[]': `Array.isArray(${v})`,
      int: `typeof ${v} === 'number'`,
      'int[]': a.fixedLength ? `isIntListOrInt(${v})` : `isIntList(${v})`,
      float: `typeof ${v} === 'number'`,
      'float[]': `Array.isArray(${v})`,
      bool: `typeof ${v} === 'boolean'`,
      'bool[]': `Array.isArray(${v})`,
      Scalar: `isScalar(${v})`,
      'Scalar[]': `Array.isArray(${v})`,
      str: `typeof ${v} === 'string'`,
      Device: `typeof ${v} === 'string'`,
      Generator: `${v} instanceof Generator`,
    }[a.kind]!;
  }
  const nullOk = a.optional;
  const alts = [p];
  if (missingOk) alts.unshift(`${v} === undefined`);
  if (nullOk) alts.unshift(`${v} === null`);
  return alts.length > 1 ? `(${alts.join(' || ')})` : p;
}

function convert(a: OpArgSchema, v: string, op: string): string {
  const where = `'${op}', '${a.name}'`;
  switch (a.kind) {
    case 'Tensor':
      return a.optional ? `oth(${v}, ${where})` : `th(${v}, ${where})`;
    case 'Tensor[]':
      return `ths(${v}, ${where})`;
    case 'Tensor?[]':
      return `oths(${v}, ${where})`;
    case 'Generator':
      return `gh(${v})`;
    case 'int':
      if (isDType(a)) return `dc(${v}, '${op}')`;
      if (isMemoryFormat(a)) return `mfc(${v}, '${op}')`;
      return v;
    default:
      return v;
  }
}

const RETURN_TYPES: Record<string, string> = {
  'Tensor[]': 'Tensor[]',
  int: 'number',
  float: 'number',
  bool: 'boolean',
  Scalar: 'number',
  'int[]': 'number[]',
  str: 'string',
};

function returnType(s: OpSchema): string {
  const one = (r: OpArgSchema) => {
    if (isDType(r)) return 'DType';
    if (r.kind === 'Tensor') return r.optional ? 'Tensor | null' : 'Tensor';
    return RETURN_TYPES[r.kind] ?? 'unknown';
  };
  if (s.returns.length === 0) return 'void';
  if (s.returns.length === 1) return one(s.returns[0]);
  return `[${s.returns.map(one).join(', ')}]`;
}

function returnExpr(s: OpSchema, call: string, args: string[]): string {
  const writtenArg = s.args.findIndex((a) => a.writes);
  const one = (r: OpArgSchema, v: string): string => {
    // a ScalarType comes back as its c10 code (promote_types, result_type): PyTorch returns the dtype
    if (isDType(r)) return `dtypeFromCode(${v} as number)`;
    if (r.kind === 'Tensor' && r.writes && writtenArg >= 0) return args[writtenArg];
    if (r.kind === 'Tensor') return r.optional ? `owrap(${v})` : `wrap(${v} as number)`;
    if (r.kind === 'Tensor[]') return `(${v} as number[]).map(wrap)`;
    return `${v} as ${({ int: 'number', float: 'number', bool: 'boolean', Scalar: 'number' } as Record<string, string>)[r.kind] ?? 'unknown'}`;
  };
  if (s.returns.length === 0) return `${call};\n    return;`;
  if (s.returns.length === 1) {
    const r = s.returns[0];
    if (r.kind === 'Tensor' && r.writes && writtenArg >= 0)
      return `${call};\n    return ${args[writtenArg]};`;
    return `return ${one(r, call)};`;
  }
  return `const r = ${call} as unknown[];\n    return [${s.returns.map((r, i) => one(r, `r[${i}]`)).join(', ')}];`;
}

const usable = (s: OpSchema) =>
  ![...s.args, ...s.returns].some((a) => a.kind === 'unsupported') &&
  !s.args.some((a) => a.writes && a.kwargOnly) && // `out=` variants
  !s.overload.endsWith('out') &&
  !s.returns.some((r) => r.kind !== 'Tensor' && r.writes);

const ops = native.listOps();
const byName = new Map<string, OpSchema[]>();
for (const s of ops) {
  const base = s.name.replace(/^aten::/, '');
  if (!OPS.includes(base) || !usable(s)) continue;
  if (!byName.has(base)) byName.set(base, []);
  byName.get(base)!.push(s);
}

/** Factories (zeros, randn, ...) take dtype/device options and, as in PyTorch, requiresGrad. */
const isFactory = (s: OpSchema) =>
  s.args.some((a) => a.kwargOnly && a.name === 'device') &&
  s.returns.length === 1 &&
  s.returns[0].kind === 'Tensor';
const positional = (s: OpSchema) => s.args.filter((a) => !a.kwargOnly);
const keywords = (s: OpSchema) => s.args.filter((a) => a.kwargOnly);
function sortKey(s: OpSchema): number[] {
  return [positional(s).length, ...positional(s).map((a) => KIND_RANK[a.kind] ?? 99)];
}
function compareKeys(a: number[], b: number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? -1) - (b[i] ?? -1);
    if (d !== 0) return d;
  }
  return 0;
}

const qualified: string[] = [];
const opIndex = (s: OpSchema) => {
  qualified.push(`${s.name}${s.overload ? `.${s.overload}` : ''}`);
  return qualified.length - 1;
};

/** Index of the last positional parameter without a default (-1 if none). */
function lastRequired(pos: OpArgSchema[]): number {
  let last = -1;
  pos.forEach((a, i) => {
    if (!a.hasDefault) last = i;
  });
  return last;
}

/**
 * Parameter lists for the declarations of one overload: its positional parameters up
 * to each cut from the last required one on, then an options object holding the rest
 * by name and the keyword-only ones. Python lets any parameter be named, so
 * `sort(x, descending=True)` is `sort(x, { descending: true })` and
 * `linalg.vector_norm(A, 2, dtype=torch.float64)` is
 * `linalgVectorNorm(A, 2, { dtype: 'float64' })`.
 */
function paramLists(s: OpSchema, skipSelf: boolean): string[] {
  const pos = positional(s).slice(skipSelf ? 1 : 0);
  const last = lastRequired(pos);
  const entry = (a: OpArgSchema) => `${camel(a.name)}?: ${tsType(a)}`;
  const kw = keywords(s).map(entry);
  if (isFactory(s)) kw.push('requiresGrad?: boolean');
  const withOpts = (parts: string[], names: string[]) =>
    (names.length ? [...parts, `opts?: { ${names.join('; ')} }`] : parts).join(', ');
  const full = pos.map((a, i) => `${camel(a.name)}${i > last ? '?' : ''}: ${tsType(a)}`);
  const lists = [withOpts(full, kw)];
  for (let cut = pos.length - 1; cut > last; cut--) {
    lists.push(withOpts(full.slice(0, cut), [...pos.slice(cut).map(entry), ...kw]));
  }
  return lists;
}

/** The options object of a varargs factory: every overload's keyword-only arguments together. */
function keywordOptionsType(overloads: OpSchema[]): string {
  const entries = new Map<string, string>();
  for (const s of overloads)
    for (const a of keywords(s)) entries.set(camel(a.name), `${camel(a.name)}?: ${tsType(a)}`);
  entries.set('requiresGrad', 'requiresGrad?: boolean');
  return `{ ${[...entries.values()].join('; ')} }`;
}

/** Names an options object may hold for an overload, in schema order (self first). */
function optionNames(s: OpSchema): string[] {
  const names = s.args.map((a) => camel(a.name));
  if (isFactory(s)) names.push('requiresGrad');
  return names;
}

const lines: string[] = [];
const methodDecls: string[] = [];
const methodImpls: string[] = [];
const exported: string[] = [];

for (const base of [...new Set(OPS)]) {
  const overloads = byName.get(base);
  if (!overloads) {
    console.warn(`gen-ops: no usable schema for ${base}`);
    continue;
  }
  overloads.sort((a, b) => compareKeys(sortKey(a), sortKey(b)));
  const fn = RENAMED_FUNCTIONS[base] ?? camel(base);
  exported.push(fn);
  const single = overloads.length === 1;
  const firstLine = lines.length;
  for (const s of overloads) {
    for (const params of paramLists(s, false)) {
      lines.push(`/** \`${s.schema}\` */`);
      lines.push(`export function ${fn}(${params}): ${returnType(s)};`);
    }
  }
  const varargs = VARARGS_FUNCTIONS.has(base);
  if (varargs) {
    const o = keywordOptionsType(overloads);
    lines.push(`/** Sizes as varargs, as torch.${base}(2, 3): the options may follow them. */`);
    lines.push(`export function ${fn}(...sizeThenOptions: [...size: number[], opts: ${o}]): Tensor;`);
    lines.push(`export function ${fn}(...size: number[]): Tensor;`);
  }
  lines.push(`export function ${fn}(...a: any[]): any {`);
  // PyTorch's varargs sizes: the leading numbers become the size list.
  if (varargs) lines.push("  a = typeof a[0] === 'number' ? leadingSizes(a) : a;");
  // A trailing plain object holds options: the keyword-only arguments, and any
  // positional parameter not given positionally, by its camelCase name (as Python
  // lets any parameter be named). Without anything to name, every argument is positional.
  const usesOpts = overloads.some(
    (s) => keywords(s).length > 0 || positional(s).some((p, i) => i > 0 && p.hasDefault),
  );
  if (usesOpts) {
    const fewest = Math.min(...overloads.map((s) => positional(s).filter((p) => !p.hasDefault).length));
    const all = [...new Set(overloads.flatMap(optionNames))].map((x) => `'${x}'`).join(', ');
    lines.splice(firstLine, 0, `const ${fn}Params = [${all}];`);
    lines.push(
      fewest ? `  const n = positionalCount(a, ${fewest}, ${fn}Params);` : '  const n = positionalCount(a);',
    );
    lines.push('  const o = a[n];');
  } else {
    lines.push('  const n = a.length;');
  }
  for (const s of overloads) {
    const idx = opIndex(s);
    const pos = positional(s);
    const kw = keywords(s);
    const required = pos.filter((p) => !p.hasDefault).length;
    const nameable = (p: OpArgSchema) => usesOpts && p.name !== 'self';
    const value = (p: OpArgSchema, i: number) =>
      nameable(p) ? `(n > ${i} ? a[${i}] : o?.${camel(p.name)})` : `a[${i}]`;
    const args = pos.map(value);
    const converted = pos.map((p, i) => convert(p, args[i], qualified[idx]));
    for (const k of kw) converted.push(convert(k, `o?.${camel(k.name)}`, qualified[idx]));
    const call = `N.call(op(${idx})${converted.length ? `, ${converted.join(', ')}` : ''})`;
    const body = isFactory(s) ? `return rg(wrap(${call} as number), o);` : returnExpr(s, call, args);
    const names = `[${optionNames(s)
      .map((x) => `'${x}'`)
      .join(', ')}]`;
    if (single) {
      const bad = [`n > ${pos.length}`];
      if (usesOpts) bad.push(`(o !== undefined && !optionsFit(o, ${names}, n))`);
      lines.push(
        `  if (${bad.join(' || ')}) throw noOverload('${fn}', a${usesOpts ? `, ${fn}Params` : ''});`,
      );
      lines.push(`  ${body.replace(/\n {4}/g, '\n  ')}`);
    } else {
      const conds = [`n <= ${pos.length}`];
      if (!usesOpts) conds.unshift(`n >= ${required}`);
      for (const [i, p] of pos.entries()) {
        if (!usesOpts) conds.push(predicate(p, `a[${i}]`));
        else if (nameable(p))
          // given positionally: as before; by name: required unless it has a default
          conds.push(
            `(n > ${i} ? ${predicate(p, `a[${i}]`)} : ${predicate(p, `o?.${camel(p.name)}`, p.hasDefault)})`,
          );
        else
          conds.push(
            p.hasDefault
              ? `(n <= ${i} || ${predicate(p, `a[${i}]`)})`
              : `n > ${i} && ${predicate(p, `a[${i}]`)}`,
          );
      }
      // Keyword-only arguments tell overloads apart too (rand vs rand.generator, a
      // Tensor or float `lr` in the fused optimizers): a required one must be given, and
      // the options may name only this overload's parameters.
      for (const k of kw) conds.push(predicate(k, `o?.${camel(k.name)}`, k.hasDefault));
      if (usesOpts) conds.push(`(o === undefined || optionsFit(o, ${names}, n))`);
      lines.push(`  if (${conds.join(' && ')}) {`);
      lines.push(`    ${body}`);
      lines.push('  }');
    }
  }
  if (!single) lines.push(`  throw noOverload('${fn}', a${usesOpts ? `, ${fn}Params` : ''});`);
  lines.push('}', '');
  // A reserved word cannot name a function, but it can name an export: t.var(x) as torch.var(x).
  if (fn !== camel(base)) lines.push(`export { ${fn} as ${camel(base)} };`, '');

  // Tensor methods: the overloads whose first argument is `self: Tensor`.
  const methodOverloads = overloads.filter(
    (s) => positional(s)[0]?.name === 'self' && positional(s)[0].kind === 'Tensor',
  );
  if (NO_METHOD.has(base) || methodOverloads.length === 0) continue;
  const m = camel(base);
  for (const s of methodOverloads) {
    for (const params of paramLists(s, true)) {
      methodDecls.push(`    /** \`${s.schema}\` */`);
      methodDecls.push(`    ${m}(${params}): ${returnType(s)};`);
    }
    if (VARARGS_METHODS.has(base) && positional(s)[1]?.kind === 'int[]') {
      methodDecls.push(`    ${m}(...${camel(positional(s)[1].name)}: number[]): ${returnType(s)};`);
    }
  }
  const impl = VARARGS_METHODS.has(base)
    ? `function (this: Tensor, ...a: any[]) {\n  return typeof a[0] === 'number' ? (${fn} as any)(this, a) : (${fn} as any)(this, ...a);\n}`
    : `function (this: Tensor, ...a: any[]) {\n  return (${fn} as any)(this, ...a);\n}`;
  methodImpls.push(`proto.${m} = ${impl};`);
}

const header = `// GENERATED by scripts/gen-ops.ts from the schemas of libtorch ${native.buildInfo().torchVersion}. Do not edit.
// Regenerate with \`npm run gen:ops\` after changing scripts/op-list.ts.
/* eslint-disable */
import { type DType, type DTypeName, dtypeFromCode, type MemoryFormat } from './dtype.ts';
import { native as N } from './native.ts';
import {
  dc,
  gh,
  leadingSizes,
  isIntList,
  isIntListOrInt,
  isScalar,
  isTensorList,
  makeOpTable,
  mfc,
  noOverload,
  optionsFit,
  oth,
  oths,
  owrap,
  positionalCount,
  rg,
  th,
  ths,
} from './op-support.ts';
import { Generator } from './random.ts';
import { type DeviceLike, type Scalar, Tensor, wrap } from './tensor.ts';

const op = makeOpTable([
${qualified.map((q) => `  '${q}',`).join('\n')}
]);

`;

const methods = `
declare module './tensor.ts' {
  interface Tensor {
${methodDecls.join('\n')}
  }
}

const proto = Tensor.prototype as any;
${methodImpls.join('\n')}
`;

const text = `${header}${lines.join('\n')}${methods}`;
if (process.argv.includes('--check')) {
  // Used by the tests: the committed file must be what this libtorch generates.
  const committed = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
  const version = native.buildInfo().torchVersion;
  if (!committed.startsWith(text.slice(0, text.indexOf('\n')))) {
    // Generated from another libtorch: wrappers may legitimately differ. Still a failure
    // if generation itself broke (it would have thrown above).
    console.log(`gen-ops: committed wrappers come from another libtorch than ${version}; not compared`);
    process.exit(0);
  }
  const same = committed === text;
  console.log(same ? 'gen-ops: up to date' : `gen-ops: ${OUT} is stale; run npm run gen:ops`);
  process.exit(same ? 0 : 1);
}
writeFileSync(OUT, text);
console.log(`gen-ops: wrote ${exported.length} functions (${qualified.length} overloads) to ${OUT}`);

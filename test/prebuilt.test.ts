// The prebuilt addons (scripts/lib/prebuilt.mjs, scripts/prebuild.mjs): which prebuild a
// machine and torch get and why another is refused; installing one into a package folder
// (sha256 checked, torch-lib linked to the torch, loaded in a child); a corrupt file is
// refused before anything is copied. The package test installs one through npm.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
// @ts-expect-error: plain ES modules of the install scripts, without declarations
import { addonPaths, readStamp, sha256, sourcesHash } from '../scripts/lib/addons.mjs';
import {
  installPrebuilt,
  prebuildKey,
  prebuiltCurrent,
  requiredVersion,
  selectPrebuilt,
  versionAtLeast,
  // @ts-expect-error: as above
} from '../scripts/lib/prebuilt.mjs';
// @ts-expect-error: as above
import { SetupError } from '../scripts/lib/proc.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const stamp = readStamp(ROOT);
const torch = {
  dir: stamp.torchDir,
  version: stamp.torchVersion,
  cxx11Abi: stamp.cxx11Abi,
  source: 'test',
};
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-prebuilt-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const linux = { platform: 'linux', arch: 'x64', glibc: '2.36', napi: 9 };
/** The same torch version with another local tag (or one where it has none): another build of torch. */
const otherBuild = torch.version.includes('+') ? torch.version.split('+')[0] : `${torch.version}+cu130`;

interface Entry {
  dir: string;
  platform: string;
  arch: string;
  libc: string;
  glibc: string;
  torchVersion: string;
  cxx11Abi: number;
  napi: number;
  files: Record<string, string>;
}

/**
 * A package folder with the checkout's native sources and one prebuild for `over`: the
 * checkout's built addons, as scripts/prebuild.mjs would lay them out.
 */
function packageWith(name: string, over: Partial<Entry> = {}, sources?: string): string {
  const root = join(tmp, name);
  cpSync(join(ROOT, 'native', 'src'), join(root, 'native', 'src'), { recursive: true });
  cpSync(join(ROOT, 'native', 'image'), join(root, 'native', 'image'), { recursive: true });
  cpSync(join(ROOT, 'native', 'CMakeLists.txt'), join(root, 'native', 'CMakeLists.txt'));
  const entry = {
    platform: 'linux',
    arch: 'x64',
    libc: 'glibc',
    glibc: '2.34',
    torchVersion: torch.version,
    cxx11Abi: torch.cxx11Abi,
    napi: 8,
    ...over,
  } as Entry;
  entry.dir = prebuildKey(entry);
  entry.files = {};
  mkdirSync(join(root, 'prebuilds', entry.dir), { recursive: true });
  for (const f of Object.values(addonPaths(ROOT)) as string[]) {
    const base = f.slice(f.lastIndexOf('/') + 1);
    cpSync(f, join(root, 'prebuilds', entry.dir, base));
    entry.files[base] = sha256(readFileSync(f));
  }
  const manifest = { sourcesHash: sources ?? sourcesHash(root), prebuilds: [entry] };
  writeFileSync(join(root, 'prebuilds', 'manifest.json'), JSON.stringify(manifest));
  return root;
}

test('versions compare by number, and a library asks for its highest symbol version', () => {
  assert.ok(versionAtLeast('2.36', '2.34'));
  assert.ok(versionAtLeast('2.34', '2.34'));
  assert.ok(!versionAtLeast('2.9', '2.34'));
  assert.ok(versionAtLeast('3.4.30', '3.4.9'));
  const dynstr = Buffer.from('\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.14\0GLIBCXX_3.4.30\0GLIBCXX_3.4.9\0');
  assert.equal(requiredVersion(dynstr, 'GLIBC'), '2.34');
  assert.equal(requiredVersion(dynstr, 'GLIBCXX'), '3.4.30');
  assert.equal(requiredVersion(Buffer.from('nothing'), 'GLIBC'), undefined);
  // The checkout's own addon: a real ELF file, linked against this machine's glibc.
  const addon = readFileSync(addonPaths(ROOT).addon);
  assert.match(String(requiredVersion(addon, 'GLIBC')), /^2\.\d+$/);
});

test('the prebuild for this machine and torch is chosen; any other is refused with why', () => {
  const root = packageWith('select');
  const { entry } = selectPrebuilt(root, torch, linux);
  assert.equal(entry.dir, `linux-x64-glibc-torch${torch.version}-cxx11abi${torch.cxx11Abi}-napi8`);

  const why = (host: object, t = torch, r = root) => selectPrebuilt(r, t, host).why as string;
  assert.match(
    why({ ...linux, arch: 'arm64' }),
    /^no prebuilt addons for linux-arm64 \(there are: linux-x64-/,
  );
  assert.match(why({ ...linux, glibc: undefined }), /need glibc, and this machine has another C library/);
  assert.match(
    why({ ...linux, glibc: '2.31' }),
    /need glibc >= 2\.34 and Node-API 8; this machine has glibc 2\.31/,
  );
  assert.match(why({ ...linux, napi: 7 }), /Node-API 8; this machine has glibc 2\.36, Node-API 7/);
  assert.match(
    why(linux, { ...torch, version: '2.12.0' }),
    /^no prebuilt addons for torch 2\.12\.0 \(C\+\+11 ABI/,
  );
  // The same version with another local tag is another build of torch (CUDA, not CPU).
  const other = why(linux, { ...torch, version: otherBuild });
  assert.ok(other.startsWith(`no prebuilt addons for torch ${otherBuild} `), other);
  assert.match(why(linux, { ...torch, cxx11Abi: 1 - torch.cxx11Abi }), /C\+\+11 ABI/);
  assert.match(why(linux, torch, join(tmp, 'none')), /this package has no prebuilt addons/);
  const stale = packageWith('stale', {}, 'f'.repeat(64));
  assert.match(why(linux, torch, stale), /built from other sources than this package's/);
});

test('a prebuild installs: files checked and copied, torch-lib linked, loaded, stamped', () => {
  const root = packageWith('install');
  const { entry } = selectPrebuilt(root, torch, linux);
  assert.equal(prebuiltCurrent(root, torch, entry), false);
  const reported = installPrebuilt(root, torch, entry);
  assert.equal(reported, torch.version.split('+')[0]);
  const release = join(root, 'native', 'build', 'Release');
  assert.equal(readlinkSync(join(release, 'torch-lib')), join(torch.dir, 'lib'));
  for (const [name, hash] of Object.entries(entry.files))
    assert.equal(sha256(readFileSync(join(release, name))), hash);
  const installed = readStamp(root);
  assert.equal(installed.addons, 'prebuilt');
  assert.equal(installed.prebuilt, entry.dir);
  assert.equal(installed.torchDir, torch.dir);
  assert.equal(prebuiltCurrent(root, torch, entry), true);
  // The addon loads through the link, in a process of its own, and computes.
  const code = `const a = require(${JSON.stringify(join(release, 'tsddp.node'))}); console.log(a.buildInfo().torchVersion)`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  // Another torch folder for the same prebuild is not this install.
  assert.equal(prebuiltCurrent(root, { ...torch, dir: join(tmp, 'elsewhere') }, entry), false);
  // Nothing is left of the staging folder it was loaded in first.
  assert.deepEqual(
    readdirSync(join(root, 'native', 'build')).filter((f) => f.startsWith('.')),
    [],
  );
});

/** Whether `f` is a SetupError whose message matches `re` (what install.mjs falls back on). */
const setupError = (re: RegExp) => (f: unknown) => f instanceof SetupError && re.test((f as Error).message);

test('a prebuild that does not load here leaves the addons that were there, and says why', () => {
  const root = packageWith('noload');
  const { entry } = selectPrebuilt(root, torch, linux);
  installPrebuilt(root, torch, entry); // a working install first
  const release = join(root, 'native', 'build', 'Release');
  const before = readFileSync(join(release, 'tsddp.node'));
  const stampBefore = readStamp(root);
  // A "prebuilt" tsddp.node that is no shared library, listed with its own sha256.
  const broken = Buffer.from('not an ELF file');
  writeFileSync(join(root, 'prebuilds', entry.dir, 'tsddp.node'), broken);
  const manifestPath = join(root, 'prebuilds', 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  manifest.prebuilds[0].files['tsddp.node'] = sha256(broken);
  writeFileSync(manifestPath, JSON.stringify(manifest));
  const { entry: brokenEntry } = selectPrebuilt(root, torch, linux);
  assert.throws(() => installPrebuilt(root, torch, brokenEntry), setupError(/the addon does not load/));
  assert.deepEqual(readFileSync(join(release, 'tsddp.node')), before);
  assert.deepEqual(readStamp(root), stampBefore);
  assert.deepEqual(
    readdirSync(join(root, 'native', 'build')).filter((f) => f.startsWith('.')),
    [],
  );
});

test('a manifest naming a file outside its folder is refused', () => {
  const root = packageWith('escape');
  const { entry } = selectPrebuilt(root, torch, linux);
  assert.throws(
    () => installPrebuilt(root, torch, { ...entry, files: { '../../x.node': entry.files['tsddp.node'] } }),
    setupError(/names a file outside its folder: \.\.\/\.\.\/x\.node/),
  );
});

test('a corrupt prebuilt file is refused before anything is copied', () => {
  const root = packageWith('corrupt');
  const { entry } = selectPrebuilt(root, torch, linux);
  const file = join(root, 'prebuilds', entry.dir, 'tsddp_image.node');
  const bytes = readFileSync(file);
  bytes[bytes.length >> 1] ^= 0xff;
  writeFileSync(file, bytes);
  assert.throws(
    () => installPrebuilt(root, torch, entry),
    setupError(/prebuilds\/linux-x64-.*\/tsddp_image\.node is missing or does not match its sha256/),
  );
  assert.equal(existsSync(join(root, 'native', 'build', 'Release', 'tsddp.node')), false);
  assert.deepEqual(readStamp(root), {});
});

// Where the installed package finds a torch the user already has, before downloading one
// (scripts/lib/torch.mjs findTorch with userEnvs, as scripts/install.mjs calls it): the
// project's .venv, then venv, $VIRTUAL_ENV, $CONDA_PREFIX, python3, and where `pip show
// torch` points. Each environment here is a stand-in: a `bin/python` script that answers
// the probe as a Python with that torch would, and a `pip3` that prints pip's Location.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, afterEach, test } from 'node:test';
import { pathToFileURL } from 'node:url';
// @ts-expect-error: a plain ES module of the install scripts, without declarations
import { downloadSize, findTorch } from '../scripts/lib/torch.mjs';

const tmp = mkdtempSync(join(tmpdir(), 'tsddp-install-torch-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const saved = { ...process.env };
afterEach(() => {
  for (const k of ['INIT_CWD', 'VIRTUAL_ENV', 'CONDA_PREFIX', 'PATH']) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

function script(path: string, body: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

/** An environment at `prefix` whose python imports torch `version` (or none). */
function env(prefix: string, version: string | null): string {
  script(join(prefix, 'bin', 'python'), version === null ? 'exit 1' : `echo "${prefix}/torch ${version} 1"`);
  return prefix;
}

/** A PATH whose python3 has no torch (and whose pip3 says `pipShows`), so the machine's own never answers. */
function isolatedPath(name: string, pipShows?: string): string {
  const bin = join(tmp, name, 'path');
  script(join(bin, 'python3'), 'exit 1');
  script(
    join(bin, 'pip3'),
    pipShows === undefined ? 'exit 1' : `echo "Name: torch"; echo "Location: ${pipShows}"`,
  );
  script(join(bin, 'pip'), 'exit 1');
  return [bin, '/usr/bin', '/bin'].join(delimiter);
}

const find = async (logs: string[] = []) =>
  await findTorch({
    stamp: {},
    venv: join(tmp, 'no-cache'),
    venvSource: 'cache',
    log: (m: string) => logs.push(m),
    userEnvs: true,
  });

test("the project's .venv comes first, then venv, $VIRTUAL_ENV and $CONDA_PREFIX", async () => {
  const project = join(tmp, 'project');
  env(join(project, '.venv'), '2.13.0+cpu');
  env(join(project, 'venv'), '2.12.0');
  process.env.INIT_CWD = project;
  process.env.VIRTUAL_ENV = env(join(tmp, 'active'), '2.11.0');
  process.env.CONDA_PREFIX = env(join(tmp, 'conda'), '2.10.0');
  process.env.PATH = isolatedPath('p1');
  let t = await find();
  assert.deepEqual(
    [t.source, t.version, t.dir],
    ["the project's .venv", '2.13.0+cpu', join(project, '.venv', 'torch')],
  );
  rmSync(join(project, '.venv'), { recursive: true });
  assert.equal((await find()).source, "the project's venv");
  rmSync(join(project, 'venv'), { recursive: true });
  assert.equal((await find()).source, '$VIRTUAL_ENV');
  delete process.env.VIRTUAL_ENV;
  t = await find();
  assert.deepEqual([t.source, t.version], ['$CONDA_PREFIX', '2.10.0']);
});

test('an environment with a torch older than 2.4, or none, is passed over and said so', async () => {
  process.env.INIT_CWD = join(tmp, 'old');
  env(join(tmp, 'old', '.venv'), '2.1.0');
  env(join(tmp, 'old', 'venv'), null);
  process.env.VIRTUAL_ENV = env(join(tmp, 'fine'), '2.13.0');
  delete process.env.CONDA_PREFIX;
  process.env.PATH = isolatedPath('p2');
  const logs: string[] = [];
  assert.equal((await find(logs)).source, '$VIRTUAL_ENV');
  assert.deepEqual(logs, ["the project's .venv has torch 2.1.0 (< 2.4), not using it"]);
});

test('with no Python that imports torch, the torch `pip show torch` points at is taken', async () => {
  const site = join(tmp, 'site-packages');
  mkdirSync(join(site, 'torch', 'include', 'torch'), { recursive: true });
  writeFileSync(join(site, 'torch', 'version.py'), "__version__ = '2.13.0+cpu'\n");
  delete process.env.INIT_CWD;
  delete process.env.VIRTUAL_ENV;
  delete process.env.CONDA_PREFIX;
  process.env.PATH = isolatedPath('p3', site);
  const t = await find();
  assert.deepEqual([t.source, t.dir, t.version], ['pip show torch', join(site, 'torch'), '2.13.0+cpu']);
});

test("the torch download's size is known before it starts: pip's dry-run report, each wheel measured", async () => {
  const wheels = join(tmp, 'wheels');
  mkdirSync(wheels, { recursive: true });
  writeFileSync(join(wheels, 'torch.whl'), Buffer.alloc(3_000_000));
  writeFileSync(join(wheels, 'sympy.whl'), Buffer.alloc(500_000));
  const urls = ['torch.whl', 'sympy.whl'].map((w) => pathToFileURL(join(wheels, w)).href);
  const report = JSON.stringify({ install: urls.map((url) => ({ download_info: { url } })) });
  // A python whose pip writes that report where --report says.
  const py = join(tmp, 'reporting', 'bin', 'python');
  script(py, `while [ "$1" != "--report" ]; do shift; done; printf '%s' '${report}' > "$2"`);
  assert.equal(await downloadSize(py, 'torch==2.13.0'), 3_500_000);
  // A pip that cannot tell (no --report, an old pip): unknown, not an error.
  const old = join(tmp, 'old-pip', 'bin', 'python');
  script(old, 'exit 2');
  assert.equal(await downloadSize(old, 'torch==2.13.0'), undefined);
});

test('no torch anywhere and no python3 to install one: one message naming both fixes', async () => {
  delete process.env.INIT_CWD;
  delete process.env.VIRTUAL_ENV;
  delete process.env.CONDA_PREFIX;
  const bin = join(tmp, 'no-python', 'path');
  script(join(bin, 'pip3'), 'exit 1'); // a PATH with no python3 at all
  process.env.PATH = bin;
  const logs: string[] = [];
  await assert.rejects(
    find(logs),
    /no torch was found, and there is no python3 on PATH to pip-install one with: install python3 .* or set LIBTORCH/,
  );
  // First it says where it looked.
  assert.match(logs.join('\n'), /no torch >= 2\.4 in python3, pip show torch: installing one/);
});

// Checkpoint directories: save → load of the whole training state (docs/reliability.md R17),
// corrupt / truncated / tampered checkpoints refused with nothing applied (9), pickles
// refused (11), SIGKILL during a write (8), keepLast, stale temp cleanup, and the
// committed checkpoint written by tsddp (PyTorch-checked by make_fixture.py) still loading.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  CheckpointError,
  latestCheckpoint,
  loadCheckpoint,
  type SavedCheckpoint,
  safetensors,
  saveCheckpoint,
  verifyCheckpoint,
} from '../src/checkpoint/index.ts';
import { parseStrictJson, toPlain } from '../src/checkpoint/strict-json.ts';
import * as t from '../src/index.ts';
import { stateAt } from './fixtures/checkpoint/crash-writer.ts';
import {
  FakeModule,
  FakeOptimizer,
  FakeScaler,
  FakeScheduler,
  freshTargets,
  TINY_KEYS,
} from './fixtures/checkpoint/fakes.ts';

const FIXTURES = new URL('./fixtures/checkpoint/', import.meta.url).pathname;
const tmp = mkdtempSync(join(tmpdir(), 'tsddp-ckpt-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
let rootCount = 0;
const newRoot = () => join(tmp, `root${rootCount++}`);

/** The full training state the round-trip and corruption tests save (world size 2). */
function trainingState(step = 120) {
  const scheduler = new FakeScheduler();
  scheduler.state = { lastEpoch: 12, baseLrs: [0.1], lastLr: [0.001], milestones: [3, 9] };
  const scaler = new FakeScaler();
  scaler.state = { ...scaler.state, scale: 1024, growthTracker: 7 };
  return {
    model: new FakeModule(0, 42),
    optimizer: new FakeOptimizer(1),
    scheduler,
    scaler,
    epoch: 3,
    step,
    samplerEpoch: 3,
    worldSize: 2,
    extra: {
      bestAcc: 0.8125,
      notes: 'resume me',
      special: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY],
      big: 2n ** 70n,
      ema: { 'fc.bias': t.tensor([0.5, -0.25]) },
    },
  };
}

/** Draws from the global generator are what `seed` would give: RNG state untouched. */
function assertRngIsSeed(seed: number): void {
  const want = t.rand([4], { generator: new t.Generator().manualSeed(seed) }).toArray();
  assert.deepEqual(t.rand([4]).toArray(), want, 'global RNG state was changed');
}

function assertUntouched(tg: ReturnType<typeof freshTargets>, seed: number): void {
  const fresh = freshTargets();
  assert.equal(tg.model.loadCalls, 0, 'model.loadStateDict was called');
  assert.deepEqual(tg.model.snapshot(), fresh.model.snapshot(), 'model changed');
  assert.equal(tg.optimizer.loadCalls + tg.scheduler.loadCalls + tg.scaler.loadCalls + tg.sampler.calls, 0);
  assert.deepEqual(tg.optimizer.snapshot(), fresh.optimizer.snapshot());
  assert.deepEqual(tg.scheduler.state, fresh.scheduler.state);
  assert.deepEqual(tg.scaler.state, fresh.scaler.state);
  assertRngIsSeed(seed);
}

describe('save and resume (docs/reliability.md R17)', () => {
  test('restores model, optimizer, LR schedule, grad scaler, RNG, sampler epoch, step and extra', async () => {
    const root = newRoot();
    const s = trainingState();
    t.manualSeed(123);
    t.rand([5]);
    const saved = await saveCheckpoint(root, s);
    assert.equal(saved.dir, join(root, 'ckpt-000120'));
    const drawAfterSave = t.rand([8]).toArray();

    // Layout: the files, model keys with torchvision names, optimizer keys state.<i>.<name>.
    assert.deepEqual(readdirSync(saved.dir).sort(), [
      'manifest.json',
      'model.safetensors',
      'optimizer.safetensors',
      'trainer.json',
      'trainer.safetensors',
    ]);
    assert.deepEqual(
      Object.keys(saved.manifest.files).sort(),
      readdirSync(saved.dir)
        .filter((f) => f !== 'manifest.json')
        .sort(),
    );
    const model = await safetensors.readSafetensors(join(saved.dir, 'model.safetensors'));
    assert.deepEqual(Object.keys(model.tensors).sort(), TINY_KEYS.map(([k]) => k).sort());
    assert.deepEqual(model.metadata, { format: 'pt' });
    assert.equal(model.tensors['bn1.num_batches_tracked'].dtype, 'int64');
    const opt = await safetensors.loadFile(join(saved.dir, 'optimizer.safetensors'));
    assert.deepEqual(
      Object.keys(opt).sort(),
      [0, 1, 2, 3, 4].map((i) => `state.${i}.momentum_buffer`),
    );
    const trainer = JSON.parse(readFileSync(join(saved.dir, 'trainer.json'), 'utf8'));
    assert.deepEqual(trainer.parts.optimizer.paramGroups, s.optimizer.paramGroups);
    assert.equal(trainer.worldSize, 2);

    t.manualSeed(999);
    const tg = freshTargets();
    const live = t.memory().tensors;
    const r = await loadCheckpoint(saved.dir, tg, { worldSize: 2 });
    // Only what the targets adopted (5 momentum buffers) and the extra tensor remain:
    // the tensors read for the model were freed once copied in.
    assert.equal(t.memory().tensors, live + 5 + 1);

    assert.deepEqual(tg.model.snapshot(), s.model.snapshot());
    assert.deepEqual(tg.optimizer.snapshot(), s.optimizer.snapshot());
    assert.deepEqual(tg.scheduler.state, s.scheduler.state);
    assert.deepEqual(tg.scaler.state, s.scaler.state);
    assert.equal(tg.sampler.epoch, 3);
    assert.deepEqual(t.rand([8]).toArray(), drawAfterSave, 'RNG stream continues where it was saved');
    assert.equal(r.step, 120);
    assert.equal(r.epoch, 3);
    assert.equal(r.samplerEpoch, 3);
    assert.equal(r.savedWorldSize, 2);
    assert.equal(r.worldSizeChanged, false);
    const extra = r.extra as ReturnType<typeof trainingState>['extra'];
    assert.equal(extra.bestAcc, 0.8125);
    assert.equal(extra.notes, 'resume me');
    assert.deepEqual(extra.special, [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]);
    assert.equal(extra.big, 2n ** 70n);
    assert.deepEqual(extra.ema['fc.bias'].toArray(), [0.5, -0.25]);
  });

  test('a world-size change is refused with nothing applied, or resumes deterministically when allowed', async () => {
    const root = newRoot();
    const saved = await saveCheckpoint(root, trainingState());
    t.manualSeed(777);
    const tg = freshTargets();
    await assert.rejects(loadCheckpoint(saved.dir, tg, { worldSize: 3 }), (e: unknown) => {
      assert.ok(e instanceof CheckpointError);
      assert.equal(e.code, 'WORLD_SIZE_MISMATCH');
      assert.match(e.message, /saved with world size 2, this run has 3; pass allowWorldSizeChange/);
      return true;
    });
    // The default comes from WORLD_SIZE, as the launcher sets it.
    const prev = process.env.WORLD_SIZE;
    process.env.WORLD_SIZE = '4';
    try {
      await assert.rejects(loadCheckpoint(saved.dir, tg), {
        code: 'WORLD_SIZE_MISMATCH',
        message: /this run has 4/,
      });
    } finally {
      if (prev === undefined) delete process.env.WORLD_SIZE;
      else process.env.WORLD_SIZE = prev;
    }
    assertUntouched(tg, 777);

    const runs = [];
    for (let i = 0; i < 2; i++) {
      const target = freshTargets();
      const r = await loadCheckpoint(saved.dir, target, { worldSize: 3, allowWorldSizeChange: true });
      assert.equal(r.worldSizeChanged, true);
      assert.equal(r.savedWorldSize, 2);
      runs.push({
        model: target.model.snapshot(),
        opt: target.optimizer.snapshot(),
        draw: t.rand([4]).toArray(),
        sampler: target.sampler.epoch,
        step: r.step,
      });
    }
    assert.deepEqual(runs[0], runs[1]);
  });

  test('a part the caller asks for but the checkpoint lacks is MISSING, nothing applied', async () => {
    const root = newRoot();
    const saved = await saveCheckpoint(root, {
      model: new FakeModule(0, 1),
      epoch: 0,
      step: 1,
      worldSize: 1,
    });
    t.manualSeed(5);
    const tg = freshTargets();
    await assert.rejects(loadCheckpoint(saved.dir, tg, { worldSize: 1 }), {
      code: 'MISSING',
      message: /has no optimizer state to load/,
    });
    assertUntouched(tg, 5);
  });

  test('state that does not fit the targets is refused before anything is applied', async () => {
    const root = newRoot();
    const saved = await saveCheckpoint(root, trainingState());
    const cases: [string, (tg: ReturnType<typeof freshTargets>) => void, RegExp][] = [
      [
        'model shape',
        (tg) => {
          tg.model.params['fc.weight'] = t.zeros([5, 4]).keep();
        },
        /size mismatch for model 'fc\.weight': checkpoint has \[10,4\], the model has \[5,4\]/,
      ],
      [
        'missing model key (strict)',
        (tg) => {
          tg.model.params['fc.extra'] = t.zeros([1]).keep();
        },
        /missing keys \[fc\.extra\]/,
      ],
      [
        'optimizer groups',
        (tg) => {
          tg.optimizer.paramGroups.push({ params: [9], lr: 1, momentum: 0, nesterov: false });
        },
        /optimizer has 2 parameter groups, the checkpoint 1/,
      ],
    ];
    for (const [name, mutate, message] of cases) {
      t.manualSeed(11);
      const tg = freshTargets();
      mutate(tg);
      const before = tg.model.snapshot();
      await assert.rejects(loadCheckpoint(saved.dir, tg, { worldSize: 2 }), (e: unknown) => {
        assert.ok(e instanceof CheckpointError, name);
        assert.equal(e.code, 'INCOMPATIBLE', `${name}: ${e.message}`);
        assert.match(e.message, message);
        return true;
      });
      assert.equal(
        tg.model.loadCalls + tg.optimizer.loadCalls + tg.scheduler.loadCalls + tg.scaler.loadCalls,
        0,
        name,
      );
      assert.deepEqual(tg.model.snapshot(), before, name);
      assertRngIsSeed(11);
    }
    // A checkpoint saved with AMP scaling off (a disabled GradScaler's state is {}) does
    // not half-load into a run that scales.
    const noScaling = trainingState();
    noScaling.scaler.state = {} as FakeScaler['state'];
    const unscaled = await saveCheckpoint(newRoot(), noScaling);
    const scaling = freshTargets();
    await assert.rejects(loadCheckpoint(unscaled.dir, scaling, { worldSize: 2 }), (e: unknown) => {
      assert.ok(e instanceof CheckpointError && e.code === 'INCOMPATIBLE', String(e));
      assert.match(e.message, /empty GradScaler state/);
      return true;
    });
    assert.equal(scaling.model.loadCalls + scaling.optimizer.loadCalls + scaling.scaler.loadCalls, 0);
    // strict: false accepts the extra target key, as load_state_dict(strict=False) does.
    const tg = freshTargets();
    tg.model.params['fc.extra'] = t.zeros([1]).keep();
    await loadCheckpoint(saved.dir, tg, { worldSize: 2, strict: false });
    assert.deepEqual(
      tg.model.params['fc.weight'].toArray(),
      trainingState().model.params['fc.weight'].toArray(),
    );
  });
});

// --- corruption (docs/reliability.md R9) ----------------------------------------------------------

function flipBit(path: string, offset: number): void {
  const b = readFileSync(path);
  const at = offset < 0 ? b.length + offset : offset;
  b[at] ^= 0x10;
  writeFileSync(path, b);
}
interface ManifestJson {
  version: number;
  files: Record<string, { size: number; sha256: string }>;
}
function editManifest(dir: string, edit: (m: ManifestJson) => void): void {
  const path = join(dir, 'manifest.json');
  const m = JSON.parse(readFileSync(path, 'utf8'));
  edit(m);
  writeFileSync(path, JSON.stringify(m));
}
/** Makes the manifest vouch for the file as it is now (a consistent but bad checkpoint). */
function reseal(dir: string, name: string): void {
  const bytes = readFileSync(join(dir, name));
  editManifest(dir, (m) => {
    m.files[name] = { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
  });
}

describe('corrupt checkpoints are refused, nothing applied (docs/reliability.md R9)', async () => {
  const root = newRoot();
  const good = await saveCheckpoint(root, trainingState(100));
  let base: SavedCheckpoint;
  const corruptions: [string, (dir: string) => void, string, RegExp][] = [
    [
      'truncated model',
      (d) => truncateSync(join(d, 'model.safetensors'), 500),
      'CORRUPT',
      /model\.safetensors: truncated: 500 bytes, the manifest says \d+/,
    ],
    [
      'empty model file',
      (d) => truncateSync(join(d, 'model.safetensors'), 0),
      'CORRUPT',
      /truncated: 0 bytes/,
    ],
    [
      'bit flip in model data',
      (d) => flipBit(join(d, 'model.safetensors'), -3),
      'DIGEST_MISMATCH',
      /model\.safetensors: sha256 is [0-9a-f]{64}, the manifest says/,
    ],
    [
      'bit flip in model header',
      (d) => flipBit(join(d, 'model.safetensors'), 20),
      'DIGEST_MISMATCH',
      /model\.safetensors/,
    ],
    [
      'bit flip in the optimizer (model intact)',
      (d) => flipBit(join(d, 'optimizer.safetensors'), -1),
      'DIGEST_MISMATCH',
      /optimizer\.safetensors/,
    ],
    [
      'bit flip in trainer.json',
      (d) => flipBit(join(d, 'trainer.json'), 30),
      'DIGEST_MISMATCH',
      /trainer\.json/,
    ],
    [
      'bytes appended to a file',
      (d) => writeFileSync(join(d, 'trainer.safetensors'), 'xx', { flag: 'a' }),
      'CORRUPT',
      /longer than recorded/,
    ],
    [
      'digest edited in the manifest',
      (d) =>
        editManifest(d, (m) => {
          m.files['model.safetensors'].sha256 = '0'.repeat(64);
        }),
      'DIGEST_MISMATCH',
      /the manifest says 0{64}/,
    ],
    [
      'manifest truncated',
      (d) => truncateSync(join(d, 'manifest.json'), 40),
      'CORRUPT',
      /manifest is unreadable/,
    ],
    ['manifest bit flip', (d) => flipBit(join(d, 'manifest.json'), 3), 'CORRUPT', /manifest/],
    [
      'manifest with a duplicate key',
      (d) =>
        writeFileSync(
          join(d, 'manifest.json'),
          readFileSync(join(d, 'manifest.json'), 'utf8').replace('"step"', '"epoch": 1, "step"'),
        ),
      'CORRUPT',
      /duplicate key "epoch"/,
    ],
    [
      'manifest missing (never committed)',
      (d) => rmSync(join(d, 'manifest.json')),
      'MISSING',
      /no manifest\.json/,
    ],
    [
      'manifest from a newer format',
      (d) =>
        editManifest(d, (m) => {
          m.version = 2;
        }),
      'VERSION',
      /format version 2 is newer/,
    ],
    [
      'file listed but missing',
      (d) => rmSync(join(d, 'optimizer.safetensors')),
      'CORRUPT',
      /optimizer\.safetensors: file listed in the manifest is missing/,
    ],
    [
      'manifest naming a path outside the directory',
      (d) =>
        editManifest(d, (m) => {
          m.files['../x.json'] = m.files['trainer.json'];
        }),
      'CORRUPT',
      /invalid file name "\.\.\/x\.json"/,
    ],
    [
      'file replaced by a symlink',
      (d) => {
        rmSync(join(d, 'trainer.json'));
        symlinkSync(join(good.dir, 'trainer.json'), join(d, 'trainer.json'));
      },
      'CORRUPT',
      /not a regular file/,
    ],
    [
      'hostile safetensors sealed with a valid digest',
      (d) => {
        const h =
          '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}';
        const b = Buffer.alloc(8 + h.length + 4);
        b.writeBigUInt64LE(BigInt(h.length));
        b.write(h, 8);
        writeFileSync(join(d, 'model.safetensors'), b);
        reseal(d, 'model.safetensors');
      },
      'CORRUPT',
      /model\.safetensors: .*duplicate key "a"/,
    ],
    [
      'torch.save file sealed as model.safetensors',
      (d) => {
        copyFileSync(join(FIXTURES, 'torch_save.pt'), join(d, 'model.safetensors'));
        reseal(d, 'model.safetensors');
      },
      'PICKLE',
      /never unpickles/,
    ],
    [
      'trainer.json with a step the manifest disagrees with',
      (d) => {
        writeFileSync(
          join(d, 'trainer.json'),
          readFileSync(join(d, 'trainer.json'), 'utf8').replace('"step": 200', '"step": 201'),
        );
        reseal(d, 'trainer.json');
      },
      'CORRUPT',
      /step\/epoch disagree/,
    ],
    [
      'trainer.json referring to a tensor not in the file',
      (d) => {
        writeFileSync(
          join(d, 'trainer.json'),
          readFileSync(join(d, 'trainer.json'), 'utf8').replace(
            '"state.0.momentum_buffer"',
            '"state.9.momentum_buffer"',
          ),
        );
        reseal(d, 'trainer.json');
      },
      'CORRUPT',
      /refers to tensor 'state\.9\.momentum_buffer'/,
    ],
  ];
  test('setup: a good checkpoint at step 100, and a pristine one at step 200 to copy', async () => {
    base = await saveCheckpoint(newRoot(), trainingState(200));
    assert.ok(await verifyCheckpoint(base.dir));
  });
  for (const [name, corrupt, code, message] of corruptions) {
    test(name, async () => {
      const dir = join(root, 'ckpt-000200');
      rmSync(dir, { recursive: true, force: true });
      cpSync(base.dir, dir, { recursive: true });
      // The copy carries step 200; corrupt it, then check all three entry points.
      corrupt(dir);
      t.manualSeed(31);
      const tg = freshTargets();
      await assert.rejects(loadCheckpoint(dir, tg, { worldSize: 2 }), (e: unknown) => {
        assert.ok(e instanceof CheckpointError, `not a CheckpointError: ${e}`);
        assert.equal(e.code, code, e.message);
        assert.match(e.message, message);
        return true;
      });
      assertUntouched(tg, 31);
      if (!name.includes('sealed') && !name.includes('referring') && !name.includes('disagrees')) {
        await assert.rejects(verifyCheckpoint(dir), { code });
      }
      // latestCheckpoint skips the bad newest one (digest-level problems) and finds step 100.
      if (
        ['CORRUPT', 'DIGEST_MISMATCH', 'MISSING', 'VERSION'].includes(code) &&
        !name.includes('sealed') &&
        !name.includes('referring') &&
        !name.includes('disagrees')
      ) {
        const skipped: string[] = [];
        assert.equal(await latestCheckpoint(root, { onSkip: (d) => skipped.push(basename(d)) }), good.dir);
        assert.deepEqual(skipped, ['ckpt-000200']);
      }
    });
  }
});

// --- pickles (docs/reliability.md R11) -------------------------------------------------------------

describe('pickle / .pt files are refused (docs/reliability.md R11)', () => {
  test('a .pt/.pth path, pickle bytes under any name, or a directory of .pt files', async () => {
    const dir = join(tmp, 'pickles');
    mkdirSync(join(dir, 'ckpt-000001'), { recursive: true });
    copyFileSync(join(FIXTURES, 'torch_save.pt'), join(dir, 'checkpoint'));
    copyFileSync(join(FIXTURES, 'torch_save_legacy.pt'), join(dir, 'legacy'));
    copyFileSync(join(FIXTURES, 'torch_save.pt'), join(dir, 'ckpt-000001', 'model.pt'));
    const offered = [
      join(FIXTURES, 'torch_save.pt'),
      join(FIXTURES, 'torch_save_legacy.pt'),
      join(dir, 'never-existed.pth'),
      join(dir, 'checkpoint'),
      join(dir, 'legacy'),
      join(dir, 'ckpt-000001'),
    ];
    for (const path of offered) {
      t.manualSeed(3);
      const tg = freshTargets();
      // Started one at a time: a rejection nobody awaits yet would be an unhandled one.
      for (const attempt of [() => loadCheckpoint(path, tg), () => verifyCheckpoint(path)]) {
        await assert.rejects(attempt, (e: unknown) => {
          assert.ok(e instanceof CheckpointError, String(e));
          assert.equal(e.code, 'PICKLE', `${path}: ${e.message}`);
          assert.match(e.message, /tsddp never unpickles: loading a pickle can run arbitrary code/);
          assert.match(e.message, /safetensors\.torch import save_file/);
          return true;
        });
      }
      assertUntouched(tg, 3);
    }
    assert.equal(await latestCheckpoint(dir), null);
  });
});

// --- directories: keepLast, re-save, latest, temp cleanup --------------------------------------

describe('checkpoint directories', () => {
  test('keepLast keeps the newest committed checkpoints', async () => {
    const root = newRoot();
    const removed: string[] = [];
    for (const step of [1, 2, 3, 4, 5]) {
      const s = await saveCheckpoint(
        root,
        { model: new FakeModule(step, step), epoch: 0, step, worldSize: 1 },
        { keepLast: 2 },
      );
      removed.push(...s.removed.map((d) => basename(d)));
    }
    assert.deepEqual(readdirSync(root).sort(), ['ckpt-000004', 'ckpt-000005']);
    assert.deepEqual(removed, ['ckpt-000001', 'ckpt-000002', 'ckpt-000003']);
    assert.equal(await latestCheckpoint(root), join(root, 'ckpt-000005'));
  });

  test('re-saving a step replaces it; files it no longer writes are removed', async () => {
    const root = newRoot();
    await saveCheckpoint(root, {
      model: new FakeModule(1, 1),
      optimizer: new FakeOptimizer(1),
      epoch: 0,
      step: 9,
      worldSize: 1,
    });
    const again = await saveCheckpoint(root, {
      model: new FakeModule(2, 2),
      epoch: 1,
      step: 9,
      worldSize: 1,
    });
    assert.deepEqual(readdirSync(again.dir).sort(), ['manifest.json', 'model.safetensors', 'trainer.json']);
    const tg = { model: new FakeModule(50, 0) };
    const r = await loadCheckpoint(again.dir, tg, { worldSize: 1 });
    assert.equal(r.epoch, 1);
    assert.deepEqual(tg.model.snapshot(), new FakeModule(2, 2).snapshot());
  });

  test('latestCheckpoint picks the highest step among committed ones and ignores other entries', async () => {
    assert.equal(await latestCheckpoint(join(tmp, 'no-such-root')), null);
    const root = newRoot();
    mkdirSync(root);
    assert.equal(await latestCheckpoint(root), null);
    await saveCheckpoint(root, { model: new FakeModule(0, 0), epoch: 0, step: 999_999, worldSize: 1 });
    await saveCheckpoint(root, { model: new FakeModule(0, 0), epoch: 0, step: 1_000_000, worldSize: 1 });
    mkdirSync(join(root, 'ckpt-2000000')); // partial: no manifest
    mkdirSync(join(root, 'notes'));
    writeFileSync(join(root, 'ckpt-3000000'), 'a file, not a directory');
    assert.equal(await latestCheckpoint(root), join(root, 'ckpt-1000000'));
  });

  test('stale temp files of dead writers are cleaned; a live writer’s are kept', async () => {
    const root = newRoot();
    const s = await saveCheckpoint(root, { model: new FakeModule(0, 0), epoch: 0, step: 1, worldSize: 1 });
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    const deadTemp = `.model.safetensors.tmp-${dead}-0a1b2c3d`;
    const ownTemp = `.trainer.json.tmp-${process.pid}-0a1b2c3e`;
    const liveTemp = `.model.safetensors.tmp-${process.ppid}-0a1b2c3f`;
    for (const f of [deadTemp, ownTemp, liveTemp]) writeFileSync(join(s.dir, f), 'partial');
    assert.equal(await latestCheckpoint(root), s.dir);
    assert.deepEqual(
      readdirSync(s.dir).filter((f) => f.startsWith('.')),
      [liveTemp],
    );
    // A save cleans its target directory the same way.
    writeFileSync(join(s.dir, deadTemp), 'partial');
    await saveCheckpoint(root, { model: new FakeModule(0, 0), epoch: 0, step: 1, worldSize: 1 });
    assert.deepEqual(
      readdirSync(s.dir).filter((f) => f.startsWith('.')),
      [liveTemp],
    );
  });

  test('the committed tsddp checkpoint (checked in PyTorch by make_fixture.py) loads, and is what tsddp writes today', async () => {
    const dir = join(FIXTURES, 'tsddp_checkpoint', 'ckpt-000007');
    const tg = freshTargets();
    const r = await loadCheckpoint(dir, { ...tg, rng: false }, { worldSize: 2 });
    assert.equal(r.step, 7);
    assert.deepEqual(r.extra, { note: 'interop fixture' });
    assert.deepEqual(tg.model.snapshot(), new FakeModule(0, 7).snapshot());
    assert.deepEqual(tg.optimizer.snapshot(), new FakeOptimizer(0).snapshot());
    const { writeTsddpCheckpoint } = await import('./fixtures/checkpoint/make_tsddp_files.ts');
    const now = await writeTsddpCheckpoint(newRoot());
    for (const f of ['model.safetensors', 'optimizer.safetensors']) {
      assert.deepEqual(readFileSync(join(now, f)), readFileSync(join(dir, f)), f);
    }
  });
});

// --- SIGKILL during a write (docs/reliability.md R8) ---------------------------------------------------

interface Writer {
  child: ChildProcess;
  /** Lines printed so far. */
  lines: string[];
  /** Resolves once the writer printed `line` (rejects if it exits first). */
  printed(line: string): Promise<void>;
  /** The signal that ended it (null: it exited by itself, which fails the test). */
  exited: Promise<NodeJS.Signals | null>;
}

/** Starts crash-writer.ts. Its stdout is drained until it dies, so it never sees EPIPE. */
function runWriter(root: string, mode: string): Writer {
  const child = spawn(process.execPath, ['--import', 'tsx', join(FIXTURES, 'crash-writer.ts'), root, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, OMP_NUM_THREADS: '1' },
  });
  let stderr = '';
  let buf = '';
  const lines: string[] = [];
  const waiters: { line: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  child.stdout?.on('data', (d) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of waiters.filter((x) => x.line === line)) w.resolve();
    }
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (code, sig) => {
      const why = new Error(
        `writer exited (code ${code}, signal ${sig}); output: ${lines.join(' | ')}; stderr: ${stderr}`,
      );
      for (const w of waiters) w.reject(why);
      resolve(sig);
    }),
  );
  const printed = (line: string) =>
    lines.includes(line)
      ? Promise.resolve()
      : new Promise<void>((resolve, reject) => waiters.push({ line, resolve, reject }));
  return { child, lines, printed, exited };
}

async function killAt(root: string, mode: string, marker: string): Promise<string[]> {
  const w = runWriter(root, mode);
  await w.printed(marker);
  w.child.kill('SIGKILL');
  assert.equal(await w.exited, 'SIGKILL');
  return w.lines;
}

function assertStateAt(
  tg: { model: FakeModule; optimizer: FakeOptimizer },
  r: { extra: unknown; step: number },
): void {
  const want = stateAt(r.step);
  assert.deepEqual(tg.model.snapshot(), want.model.snapshot());
  assert.deepEqual(tg.optimizer.snapshot(), want.optimizer.snapshot());
  const blob = (r.extra as { blob: t.Tensor }).blob;
  assert.equal(blob.eq(r.step).all().item(), 1, 'extra blob belongs to the loaded step');
}

describe('SIGKILL during a checkpoint write (docs/reliability.md R8)', () => {
  test('the previous checkpoint still loads, the partial one is ignored, stale temp files are cleaned', async () => {
    const roots = { mid: newRoot(), manifest: newRoot(), loop: newRoot() };
    const loop = (async () => {
      const w = runWriter(roots.loop, 'loop');
      await w.printed('committed 2');
      // Somewhere inside a later save: which file, and how far, is up to the scheduler.
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 150));
      w.child.kill('SIGKILL');
      assert.equal(await w.exited, 'SIGKILL');
    })();
    const [midOut] = await Promise.all([
      killAt(roots.mid, 'mid-file', 'PAUSE'),
      killAt(roots.manifest, 'before-manifest', 'PAUSE'),
      loop,
    ]);
    assert.deepEqual(midOut, ['committed 1', 'PAUSE']);

    // Killed inside optimizer.safetensors' temp file.
    const partial = join(roots.mid, 'ckpt-000002');
    const before = readdirSync(partial);
    assert.ok(
      before.some((f) => /^\.optimizer\.safetensors\.tmp-\d+-[0-9a-f]+$/.test(f)),
      before.join(','),
    );
    assert.ok(!before.includes('manifest.json'));
    // Killed with every file in place but the manifest.
    assert.deepEqual(readdirSync(join(roots.manifest, 'ckpt-000002')).sort(), [
      'model.safetensors',
      'optimizer.safetensors',
      'trainer.json',
      'trainer.safetensors',
    ]);

    for (const root of [roots.mid, roots.manifest]) {
      const skipped: string[] = [];
      const latest = await latestCheckpoint(root, {
        onSkip: (d, e) => skipped.push(`${basename(d)}:${e.code}`),
      });
      assert.equal(latest, join(root, 'ckpt-000001'));
      assert.deepEqual(skipped, ['ckpt-000002:MISSING']);
      assert.deepEqual(
        readdirSync(join(root, 'ckpt-000002')).filter((f) => f.includes('.tmp-')),
        [],
        'temp files cleaned',
      );
      const tg = { model: new FakeModule(77, 0), optimizer: new FakeOptimizer(0, false) };
      const r = await loadCheckpoint(latest as string, tg, { worldSize: 1 });
      assert.equal(r.step, 1);
      assertStateAt(tg, r);
      // The next save supersedes the abandoned partial directory.
      const next = await saveCheckpoint(root, stateAt(3));
      assert.deepEqual(next.removed, [join(root, 'ckpt-000002')]);
      assert.equal(await latestCheckpoint(root), join(root, 'ckpt-000003'));
    }

    // Killed at a random point of a save loop: the newest committed checkpoint loads whole.
    const latest = await latestCheckpoint(roots.loop);
    assert.ok(latest !== null);
    const tg = { model: new FakeModule(77, 0), optimizer: new FakeOptimizer(0, false) };
    const r = await loadCheckpoint(latest, tg, { worldSize: 1 });
    assert.ok(r.step >= 2);
    assertStateAt(tg, r);
    for (const d of readdirSync(roots.loop)) {
      assert.deepEqual(
        readdirSync(join(roots.loop, d)).filter((f) => f.includes('.tmp-')),
        [],
      );
    }
  });
});

test('tied weights (GPT lm_head = wte) are written once and load back tied; a record naming a missing weight is CORRUPT', async () => {
  const root = mkdtempSync(join(tmpdir(), 'tsddp-ckpt-tied-'));
  try {
    const cfg = { vocabSize: 16, blockSize: 4, nLayer: 1, nHead: 2, nEmbd: 8, dropout: 0, bias: true };
    t.manualSeed(1);
    const a = t.models.gpt(cfg);
    const { dir } = await saveCheckpoint(root, { model: a, epoch: 0, step: 1, worldSize: 1 });
    const stored = await safetensors.loadFile(join(dir, 'model.safetensors'));
    assert.ok(!('lm_head.weight' in stored) && 'transformer.wte.weight' in stored);
    const record = JSON.parse(readFileSync(join(dir, 'trainer.json'), 'utf8'));
    assert.deepEqual(record.tied, { 'lm_head.weight': 'transformer.wte.weight' });
    t.manualSeed(2);
    const b = t.models.gpt(cfg);
    await loadCheckpoint(dir, { model: b }, { worldSize: 1 });
    for (const [k, v] of Object.entries(a.stateDict())) assert.ok(t.equal(v, b.stateDict()[k]), k);
    assert.equal(b.lm_head.weight, b.transformer.wte.weight, 'still one tensor');
    // A record (rewritten with a matching manifest digest) naming a weight the file does
    // not have is refused.
    record.tied = { 'lm_head.weight': 'nope' };
    const bytes = `${JSON.stringify(record, null, 1)}\n`;
    writeFileSync(join(dir, 'trainer.json'), bytes);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    manifest.files['trainer.json'] = {
      size: Buffer.byteLength(bytes),
      sha256: createHash('sha256').update(bytes).digest('hex'),
    };
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
    await assert.rejects(loadCheckpoint(dir, { model: b }, { worldSize: 1 }), (e: Error) => {
      assert.equal((e as CheckpointError).code, 'CORRUPT');
      assert.match(e.message, /tied weight 'lm_head.weight' names 'nope'/);
      return true;
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('safetensors errors repeat the path: a corrupt file sealed in a checkpoint, or a write into a missing folder, names it once', async () => {
  const root = mkdtempSync(join(tmpdir(), 'tsddp-ckpt-path-once-'));
  const count = (text: string, part: string) => text.split(part).length - 1;
  try {
    const { dir } = await saveCheckpoint(root, {
      model: new FakeModule(0, 1),
      epoch: 0,
      step: 1,
      worldSize: 1,
    });
    const file = join(dir, 'model.safetensors');
    truncateSync(file, 60); // the header now runs past the end of the file
    reseal(dir, 'model.safetensors');
    await assert.rejects(
      loadCheckpoint(dir, { model: new FakeModule(0, 2) }, { worldSize: 1 }),
      (e: Error) => {
        assert.ok(e instanceof CheckpointError, String(e));
        assert.equal(e.code, 'CORRUPT');
        assert.equal(e.path, file);
        assert.match(
          e.message,
          /model\.safetensors: header length \d+ runs past the end of the file \(60 bytes\)$/,
        );
        assert.equal(count(e.message, file), 1, e.message);
        return true;
      },
    );
    // The same file through safetensors' own reader.
    await assert.rejects(safetensors.loadFile(file), (e: Error) => {
      assert.equal(e.name, 'SafetensorsError');
      assert.equal(count(e.message, file), 1, e.message);
      return true;
    });
    // A write that cannot start: Node's error names the temp file in the same folder.
    const missing = join(root, 'no-such-folder');
    await assert.rejects(
      safetensors.saveFile({ a: t.ones([2]) }, join(missing, 'x.safetensors')),
      (e: Error) => {
        assert.ok(e instanceof CheckpointError, String(e));
        assert.equal(e.code, 'WRITE');
        assert.match(
          e.message,
          /no-such-folder\/x\.safetensors: cannot be written: ENOENT: no such file or directory, open$/,
        );
        assert.equal(count(e.message, missing), 1, e.message);
        return true;
      },
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a __proto__ key accepted in a checkpoint’s trainer.json aliases: tied names and state keys that would set a prototype are CORRUPT, named with the file', async () => {
  const root = mkdtempSync(join(tmpdir(), 'tsddp-ckpt-proto-'));
  try {
    const cfg = { vocabSize: 16, blockSize: 4, nLayer: 1, nHead: 2, nEmbd: 8, dropout: 0, bias: true };
    t.manualSeed(1);
    const a = t.models.gpt(cfg);
    const opt = new t.optim.SGD(a.parameters(), { lr: 0.1, momentum: 0.9 });
    a.forward(t.tensor([[1, 2, 3]], { dtype: 'int64' }))
      .logits.sum()
      .backward();
    opt.step();
    const { dir } = await saveCheckpoint(root, { model: a, optimizer: opt, epoch: 0, step: 1, worldSize: 1 });
    const file = join(dir, 'trainer.json');
    const original = readFileSync(file, 'utf8');
    // JSON text, not objects: an object literal's "__proto__" would set its prototype here.
    const cases: [string, string, RegExp][] = [
      [
        'tied __proto__',
        original.replace('"tied": {', '"tied": {"__proto__": "transformer.wte.weight", '),
        /trainer state has a tied weight named '__proto__'/,
      ],
      [
        'tied constructor',
        original.replace('"tied": {', '"tied": {"constructor": "transformer.wte.weight", '),
        /trainer state has a tied weight named 'constructor'/,
      ],
      [
        'optimizer state __proto__',
        original.replace(
          '"momentum_buffer": {',
          '"__proto__": {"$tsddp": "tensor", "key": "state.0.momentum_buffer"}, "momentum_buffer": {',
        ),
        /trainer state has the key '__proto__' at parts\.optimizer\.state\.0/,
      ],
      [
        'param group __proto__',
        original.replace('"lr": 0.1,', '"__proto__": {"nesterov": true}, "lr": 0.1,'),
        /trainer state has the key '__proto__' at parts\.optimizer\.paramGroups\.0/,
      ],
    ];
    for (const [name, text, message] of cases) {
      assert.notEqual(text, original, `${name}: the edit applies`);
      writeFileSync(file, text);
      reseal(dir, 'trainer.json'); // the digest passes: the parser must refuse it
      t.manualSeed(2);
      const b = t.models.gpt(cfg);
      const before = b.transformer.wte.weight.toArray();
      const opt2 = new t.optim.SGD(b.parameters(), { lr: 0.1, momentum: 0.9 });
      await assert.rejects(
        loadCheckpoint(dir, { model: b, optimizer: opt2 }, { worldSize: 1 }),
        (e: Error) => {
          assert.ok(e instanceof CheckpointError, `${name}: ${e}`);
          assert.equal(e.code, 'CORRUPT', `${name}: ${e.message}`);
          assert.equal(e.path, file, name);
          assert.match(e.message, message, name);
          return true;
        },
      );
      assert.deepEqual(b.transformer.wte.weight.toArray(), before, `${name}: nothing applied`);
    }
    // Saving such a key is refused too: it would write a checkpoint that cannot load.
    const extra = {};
    Object.defineProperty(extra, '__proto__', { value: 1, enumerable: true });
    await assert.rejects(
      saveCheckpoint(root, { model: a, epoch: 0, step: 2, worldSize: 1, extra }),
      /checkpoint state at extra\.__proto__ uses the key '__proto__'/,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a __proto__ key in checkpoint JSON stays an own key: toPlain sets no prototype and pollutes nothing', () => {
  const v = toPlain(parseStrictJson('{"__proto__": {"polluted": 1}, "a": {"__proto__": [2]}}')) as Record<
    string,
    unknown
  >;
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.deepEqual(Object.keys(v), ['__proto__', 'a']);
  assert.deepEqual(Object.getOwnPropertyDescriptor(v, '__proto__')?.value, { polluted: 1 });
  assert.equal((v as { polluted?: unknown }).polluted, undefined, 'not inherited');
  assert.equal(Object.getPrototypeOf(v.a), Object.prototype);
  assert.equal(({} as { polluted?: unknown }).polluted, undefined, 'Object.prototype untouched');
});

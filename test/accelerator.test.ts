// t.accelerator as torch.accelerator, on a machine without an accelerator (CI, this
// project's machines): what torch 2.13's CPU build answers there (is_available() False,
// current_accelerator() None, device_count() 0), and the calls that need a device refused
// with a CudaError saying so (PyTorch: "Cannot access accelerator device when none is
// available"). On a GPU the same calls are test/cuda/runtime.test.ts's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as t from '../src/index.ts';

const cpuOnly = !t.buildInfo().cudaCompiled;

test('without an accelerator: not available, no current accelerator, 0 devices', { skip: !cpuOnly }, () => {
  assert.equal(t.accelerator.isAvailable(), false);
  assert.equal(t.accelerator.currentAccelerator(), null);
  assert.equal(t.accelerator.currentAccelerator(true), null);
  assert.equal(t.accelerator.deviceCount(), 0);
});

test('without an accelerator: setDeviceIndex, currentDeviceIndex and synchronize are refused', {
  skip: !cpuOnly,
}, () => {
  const refused = (fn: () => unknown, call: string) =>
    assert.throws(
      fn,
      (e: unknown) =>
        e instanceof t.CudaError &&
        e.code === 'CUDA' &&
        e.message.startsWith(call) &&
        /no accelerator is available: this libtorch is not compiled with an accelerator \(torch .*, CPU only\)/.test(
          e.message,
        ),
      call,
    );
  refused(() => t.accelerator.setDeviceIndex(0), 'accelerator.setDeviceIndex(0)');
  refused(() => t.accelerator.setDeviceIndex(1), 'accelerator.setDeviceIndex(1)');
  refused(() => t.accelerator.currentDeviceIndex(), 'accelerator.currentDeviceIndex()');
  refused(() => t.accelerator.synchronize(), 'accelerator.synchronize()');
  refused(() => t.accelerator.synchronize(0), 'accelerator.synchronize(0)');
  // A device named by type needs an accelerator to be one of (PyTorch: "Accelerator expected").
  for (const device of ['cpu', 'cuda:0']) {
    assert.throws(
      () => t.accelerator.setDeviceIndex(device),
      (e: unknown) =>
        e instanceof t.CudaError && /is no accelerator device: there is no accelerator/.test(e.message),
      device,
    );
  }
});

test('device arguments are checked as PyTorch reads them, on any machine', () => {
  for (const bad of [-1, 1.5, Number.NaN]) {
    assert.throws(() => t.accelerator.setDeviceIndex(bad), /a device index is an integer >= 0/);
  }
  assert.throws(() => t.accelerator.setDeviceIndex('gpu0'), /'gpu0' is not a device/);
  assert.throws(
    () => t.accelerator.setDeviceIndex(undefined as unknown as number),
    /expected a device index or 'cuda:N', got undefined/,
  );
  if (!cpuOnly) {
    assert.throws(
      () => t.accelerator.setDeviceIndex('cpu'),
      /cpu doesn't match the current accelerator cuda/,
    );
    assert.throws(
      () => t.accelerator.setDeviceIndex('cuda'),
      /a device with an index \('cuda:N'\) or an integer/,
    );
  }
});

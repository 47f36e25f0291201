// Which tensors given to the safetensors writer share memory. safetensors.torch.save_file
// refuses them ("Some tensors share memory, this will lead to duplicate memory on disk and
// potential differences when loading them again"): written out, two views of one storage
// become two independent copies, and a tied weight loads back untied. This is its
// `_find_shared_tensors`: tensors are grouped by storage, then a group is split wherever
// byte ranges do not overlap (two disjoint slices of one buffer may be written).
import { ITEM_SIZE } from '../core/dtype.ts';
import * as t from '../core/index.ts';
// The addon's storage identity (c10::Storage::is_alias_of); Tensor has no method for it.
import { native } from '../core/native.ts';

interface Area {
  name: string;
  start: number;
  stop: number;
}

/** Byte range of `x` inside its storage: [first element, last element + 1 item). */
function areaOf(name: string, x: t.Tensor): Area {
  const item = ITEM_SIZE[x.dtype];
  const offset = t.ops.call('aten::storage_offset', x) as number;
  const start = offset * item;
  const shape = x.shape;
  const strides = x.stride();
  let last = offset;
  for (let d = 0; d < shape.length; d++) last += (shape[d] - 1) * strides[d];
  return { name, start, stop: last * item + item };
}

/**
 * The groups (each of two or more names, sorted) of tensors whose memory overlaps, in
 * order of their first name; empty when every tensor owns its bytes.
 */
export function sharedMemoryGroups(tensors: readonly { name: string; tensor: t.Tensor }[]): string[][] {
  // One representative per storage seen; a tensor joins the first storage it aliases.
  const storages: { rep: t.Tensor; members: { name: string; tensor: t.Tensor }[] }[] = [];
  for (const item of tensors) {
    // An empty tensor's data_ptr() is null in PyTorch: its area sorts first and is never
    // counted as shared, so empty tensors are left out here.
    if (item.tensor.numel() === 0) continue;
    const home = storages.find((s) => native.sameStorage(s.rep.h, item.tensor.h));
    if (home) home.members.push(item);
    else storages.push({ rep: item.tensor, members: [item] });
  }
  const failing: string[][] = [];
  for (const { members } of storages) {
    if (members.length < 2) continue;
    // _filter_shared_not_shared: sorted by (start, stop, name), a tensor starting at or
    // after the previous one's end opens a new group.
    const areas = members.map((m) => areaOf(m.name, m.tensor));
    areas.sort(
      (a, b) => a.start - b.start || a.stop - b.stop || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
    let group = [areas[0].name];
    let lastStop = areas[0].stop;
    const flush = () => {
      if (group.length > 1) failing.push(group.sort());
    };
    for (const a of areas.slice(1)) {
      if (a.start >= lastStop) {
        flush();
        group = [a.name];
      } else group.push(a.name);
      lastStop = a.stop;
    }
    flush();
  }
  return failing.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/**
 * Tied weights: names whose tensors are the same view of one storage (same start, shape
 * and strides), e.g. GPT's lm_head.weight and transformer.wte.weight. Returns alias ->
 * the first name of its group (in the given order); overlaps that are not the same view
 * are left for sharedMemoryGroups to refuse.
 */
export function tiedNames(tensors: readonly { name: string; tensor: t.Tensor }[]): Record<string, string> {
  const kept: { name: string; tensor: t.Tensor; key: string }[] = [];
  const tied: Record<string, string> = {};
  for (const { name, tensor } of tensors) {
    if (tensor.numel() === 0) continue;
    const a = areaOf(name, tensor);
    const key = `${tensor.dtype}|${a.start}|${tensor.shape.join(',')}|${tensor.stride().join(',')}`;
    const same = kept.find((k) => k.key === key && native.sameStorage(k.tensor.h, tensor.h));
    if (same) tied[name] = same.name;
    else kept.push({ name, tensor, key });
  }
  return tied;
}

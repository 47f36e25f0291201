// Groups beyond the default one, as torch.distributed's new_group, new_subgroups and the
// rank lookups. Every rank of the world calls newGroup in the same order (PyTorch's rule):
// the calls name the groups '1', '2', ... and each group's Gloo rendezvous goes under its
// name in the default store, exactly where PyTorch's new_group puts it, so a mixed
// PyTorch/tsddp world builds the same groups.
import { native } from '../core/native.ts';
import { DistributedError } from './errors.ts';
import { getDefaultGroup, ProcessGroup, resolveGroup, worldInit } from './process-group.ts';

export interface NewGroupOptions {
  /** Collective timeout of the group; default: the default group's. */
  timeoutMs?: number;
  /** 'gloo' (or the default group's backend); another backend than the world's is refused. */
  backend?: string;
}

function checkRanks(ranks: readonly number[], worldSize: number, what: string): number[] {
  const sorted = [...ranks].sort((a, b) => a - b);
  for (const [i, r] of sorted.entries()) {
    if (!Number.isInteger(r) || r < 0 || r >= worldSize)
      throw new RangeError(`${what}(): rank ${r} is not a rank of the world (size ${worldSize})`);
    if (i > 0 && sorted[i - 1] === r) throw new TypeError(`${what}(): rank ${r} is listed twice`);
  }
  return sorted;
}

/**
 * A new group of the world's `ranks` (default: all), as torch.distributed.new_group. Every
 * rank must call it, members or not, in the same order as the other ranks; a non-member
 * gets a group whose rank is -1, on which collectives do nothing (PyTorch's
 * GroupMember.NON_GROUP_MEMBER).
 */
export function newGroup(ranks?: readonly number[] | null, opts: NewGroupOptions = {}): ProcessGroup {
  const unknown = Object.keys(opts).filter((k) => k !== 'timeoutMs' && k !== 'backend');
  if (unknown.length > 0)
    throw new TypeError(
      `newGroup(): unknown option(s) ${unknown.join(', ')}; it takes timeoutMs and backend (groups are made on every rank, as new_group's default use_local_synchronization=False)`,
    );
  const worldGroup = getDefaultGroup();
  const init = worldInit();
  const members = checkRanks(ranks ?? worldGroup.ranks, worldGroup.size, 'newGroup');
  if (opts.backend !== undefined && opts.backend !== worldGroup.backend && opts.backend !== 'gloo')
    throw new TypeError(
      `newGroup(): backend '${opts.backend}' differs from the world's ('${worldGroup.backend}'); tsddp makes groups on the world's backends`,
    );
  const name = String(init.groupCount++);
  const timeoutMs = opts.timeoutMs ?? worldGroup.timeoutMs;
  const rank = members.indexOf(worldGroup.rank);
  const { store, backend, allTsddp } = worldGroup;
  let h = -1;
  if (rank >= 0) {
    const prefix = `${init.storeBase}/${name}/`;
    h = native.processGroupNew(
      store.h,
      rank,
      members.length,
      init.backends,
      timeoutMs,
      init.hostname,
      prefix,
      init.interfaces,
      init.cudaDevice,
      name,
    );
  }
  const group = new ProcessGroup(h, rank, members.length, backend, store, timeoutMs, allTsddp, members, name);
  if (rank >= 0) init.subgroups.push(group);
  return group;
}

/**
 * Splits the world into consecutive groups of `groupSize` ranks, as
 * torch.distributed.new_subgroups: returns this rank's group and all of them. On CPU
 * (PyTorch takes the GPU count per node by default) `groupSize` is required.
 */
export function newSubgroups(
  groupSize?: number,
  opts: NewGroupOptions = {},
): [ProcessGroup | null, ProcessGroup[]] {
  const size = getDefaultGroup().size;
  if (groupSize === undefined)
    throw new TypeError(
      'newSubgroups(): pass groupSize (PyTorch defaults it to the GPU count only with CUDA)',
    );
  if (!Number.isInteger(groupSize) || groupSize <= 0)
    throw new RangeError(`newSubgroups(): groupSize must be a positive integer, got ${groupSize}`);
  if (groupSize > size || size % groupSize !== 0)
    throw new RangeError(
      `newSubgroups(): the world size ${size} is not a multiple of groupSize ${groupSize}`,
    );
  const lists = Array.from({ length: size / groupSize }, (_, g) =>
    Array.from({ length: groupSize }, (_, i) => g * groupSize + i),
  );
  return newSubgroupsByEnumeration(lists, opts);
}

/**
 * One group per list of ranks, as torch.distributed.new_subgroups_by_enumeration: returns
 * this rank's group (null when no list has it) and all of them.
 */
export function newSubgroupsByEnumeration(
  ranksPerSubgroup: readonly (readonly number[])[],
  opts: NewGroupOptions = {},
): [ProcessGroup | null, ProcessGroup[]] {
  if (ranksPerSubgroup.length === 0)
    throw new TypeError('newSubgroupsByEnumeration(): the list of subgroups is empty');
  const seen = new Set<number>();
  for (const r of ranksPerSubgroup.flat()) {
    if (seen.has(r))
      throw new TypeError(`newSubgroupsByEnumeration(): rank ${r} is in more than one subgroup`);
    seen.add(r);
  }
  const groups = ranksPerSubgroup.map((ranks) => newGroup(ranks, opts));
  return [groups.find((g) => g.isMember) ?? null, groups];
}

/** The members' global ranks, in group-rank order (torch.distributed.get_process_group_ranks). */
export function getProcessGroupRanks(group: ProcessGroup): number[] {
  return [...resolveGroup(group).ranks];
}

/** The global rank of `groupRank` in `group` (torch.distributed.get_global_rank). */
export function getGlobalRank(group: ProcessGroup, groupRank: number): number {
  const pg = resolveGroup(group);
  const r = pg.ranks[groupRank];
  if (!Number.isInteger(groupRank) || r === undefined)
    throw new RangeError(
      `getGlobalRank(): group rank ${groupRank} is not in group '${pg.name}' (size ${pg.size})`,
    );
  return r;
}

/** The rank in `group` of the world's `globalRank` (torch.distributed.get_group_rank). */
export function getGroupRank(group: ProcessGroup, globalRank: number): number {
  const pg = resolveGroup(group);
  const r = pg.ranks.indexOf(globalRank);
  if (r < 0)
    throw new RangeError(
      `getGroupRank(): global rank ${globalRank} is not in group '${pg.name}' (ranks ${pg.ranks.join(', ')})`,
    );
  return r;
}

/** The number of groups made, the default group included (torch.distributed.get_pg_count). */
export function getPgCount(): number {
  return worldInit().groupCount;
}

/** The backend of `group` (default: the world): 'gloo' or 'nccl' (torch.distributed.get_backend). */
export function getBackend(group?: ProcessGroup): string {
  const pg = resolveGroup(group);
  if (!pg.isMember)
    throw new DistributedError(`getBackend(): this rank is not in group '${pg.name}'`, 'getBackend', -1);
  return pg.backend;
}

/** The device-to-backend map of `group`, as torch.distributed.get_backend_config ('cpu:gloo,cuda:nccl'). */
export function getBackendConfig(group?: ProcessGroup): string {
  const pg = resolveGroup(group);
  const backends = worldInit().backends;
  if (backends === 'gloo,nccl') return 'cpu:gloo,cuda:nccl';
  return pg.backend === 'nccl' ? 'cuda:nccl' : 'cpu:gloo,cuda:gloo';
}

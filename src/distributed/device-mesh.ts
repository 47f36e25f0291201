// torch.distributed.device_mesh: the ranks laid out as an n-dimensional array, with a
// process group along each dimension. fullyShard() takes a 2-D mesh for hybrid sharding
// (HSDP: shard along the last dimension, replicate along the first). The layout and the
// groups are PyTorch's (device_mesh.py): ranks row-major in the mesh, and for each
// dimension in turn one group per line of ranks along it, created by every rank in the
// same order. 1-D and 2-D meshes are offered.
import { newGroup } from './groups.ts';
import { type ProcessGroup, resolveGroup } from './process-group.ts';

export interface DeviceMeshOptions {
  /** A name per dimension, e.g. ['replicate', 'shard'] (getGroup and size take them). */
  meshDimNames?: string[];
}

/** The ranks as an n-dimensional array, and a process group along each dimension (torch's DeviceMesh). */
export class DeviceMesh {
  /** The global ranks, row-major: mesh[i][j] for a 2-D mesh. */
  readonly mesh: number[] | number[][];
  readonly shape: readonly number[];
  readonly meshDimNames: readonly string[] | null;
  private readonly groups: ProcessGroup[];
  private readonly coordinate: number[];

  /** Use initDeviceMesh(). */
  constructor(
    readonly deviceType: string,
    shape: number[],
    names: string[] | null,
    groups: ProcessGroup[],
    coordinate: number[],
  ) {
    this.shape = Object.freeze([...shape]);
    this.meshDimNames = names && Object.freeze([...names]);
    this.groups = groups;
    this.coordinate = coordinate;
    const row = (i: number, n: number) => Array.from({ length: n }, (_, j) => i * n + j);
    this.mesh =
      shape.length === 1 ? row(0, shape[0]) : Array.from({ length: shape[0] }, (_, i) => row(i, shape[1]));
  }

  get ndim(): number {
    return this.shape.length;
  }

  private dimIndex(dim: number | string | undefined, what: string): number {
    if (dim === undefined) {
      if (this.ndim !== 1)
        throw new TypeError(
          `DeviceMesh.${what}(): a ${this.ndim}-D mesh needs the dimension (an index or a name)`,
        );
      return 0;
    }
    const i = typeof dim === 'string' ? (this.meshDimNames?.indexOf(dim) ?? -1) : dim;
    if (!Number.isInteger(i) || i < 0 || i >= this.ndim)
      throw new TypeError(
        `DeviceMesh.${what}(): no dimension ${JSON.stringify(dim)} in a mesh of shape [${this.shape.join(', ')}]` +
          (this.meshDimNames ? ` named ${this.meshDimNames.join(', ')}` : ''),
      );
    return i;
  }

  /** The group of this rank's line along `dim` (torch's get_group). */
  getGroup(dim?: number | string): ProcessGroup {
    return this.groups[this.dimIndex(dim, 'getGroup')];
  }

  /** The number of ranks along `dim`, or in the whole mesh. */
  size(dim?: number | string): number {
    if (dim === undefined) return this.shape.reduce((a, b) => a * b, 1);
    return this.shape[this.dimIndex(dim, 'size')];
  }

  /** This rank's index along `dim` (torch's get_local_rank). */
  getLocalRank(dim?: number | string): number {
    return this.coordinate[this.dimIndex(dim, 'getLocalRank')];
  }

  /** This rank's coordinate in the mesh (torch's get_coordinate). */
  getCoordinate(): number[] {
    return [...this.coordinate];
  }
}

/**
 * Lays the world's ranks out as `meshShape` and makes a group along each dimension
 * (torch.distributed.device_mesh.init_device_mesh). Every rank must call it, with the same
 * arguments, after initProcessGroup(). A 1-D mesh uses the default group.
 */
export function initDeviceMesh(
  deviceType: string,
  meshShape: number[],
  opts: DeviceMeshOptions = {},
): DeviceMesh {
  if (deviceType !== 'cpu' && deviceType !== 'cuda')
    throw new TypeError(
      `initDeviceMesh(): deviceType must be 'cpu' or 'cuda', not ${JSON.stringify(deviceType)}`,
    );
  if (!Array.isArray(meshShape) || meshShape.length < 1 || meshShape.length > 2)
    throw new TypeError('initDeviceMesh(): meshShape must have 1 or 2 dimensions (more are not offered)');
  if (!meshShape.every((n) => Number.isInteger(n) && n >= 1))
    throw new TypeError(`initDeviceMesh(): meshShape [${meshShape.join(', ')}] must hold positive integers`);
  const names = opts.meshDimNames ?? null;
  if (names !== null && (names.length !== meshShape.length || new Set(names).size !== names.length))
    throw new TypeError('initDeviceMesh(): meshDimNames must name each dimension once');
  const world = resolveGroup(null);
  const size = meshShape.reduce((a, b) => a * b, 1);
  if (size !== world.size)
    throw new TypeError(
      `initDeviceMesh(): a mesh of shape [${meshShape.join(', ')}] holds ${size} ranks, but the world has ${world.size}`,
    );
  const rank = world.rank;
  if (meshShape.length === 1) return new DeviceMesh(deviceType, meshShape, names, [world], [rank]);
  const [rows, cols] = meshShape;
  const coordinate = [Math.floor(rank / cols), rank % cols];
  // PyTorch's order: dimension 0's groups (the columns), then dimension 1's (the rows).
  let along0: ProcessGroup | null = null;
  for (let c = 0; c < cols; c++) {
    const g = newGroup(Array.from({ length: rows }, (_, r) => r * cols + c));
    if (c === coordinate[1]) along0 = g;
  }
  let along1: ProcessGroup | null = null;
  for (let r = 0; r < rows; r++) {
    const g = newGroup(Array.from({ length: cols }, (_, c) => r * cols + c));
    if (r === coordinate[0]) along1 = g;
  }
  return new DeviceMesh(
    deviceType,
    meshShape,
    names,
    [along0 as ProcessGroup, along1 as ProcessGroup],
    coordinate,
  );
}

// torch.distributed.algorithms: Join for uneven inputs (join.ts).
export { Join, type Joinable, type JoinConfig, type JoinHook, type JoinOptions } from './join.ts';

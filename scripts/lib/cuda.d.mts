export function torchHasCuda(torchDir: string): boolean;
export function cudaIncludeDirs(torchDir: string, env?: Record<string, string | undefined>): string[];
export function cudaFlags(torchDir: string, log?: (msg: string) => void): string[];

/** "2.13.0+cpu" for a torch package folder or a libtorch folder; undefined when unknown. */
export function torchFolderVersion(dir: string): string | undefined;

// What the `tsddp` and `tsrun` commands do with an error that ends them: a native addon that
// cannot load (NativeAddonError: not built, or built for a torch that is gone) is one
// message naming the fix, not a stack trace; anything else is thrown on.
export function fatal(e) {
  if (e?.code !== 'NATIVE_ADDON') throw e;
  console.error(e.message);
  process.exit(1);
}

// Entry of the pre-built data worker (worker-bundle.ts): the built-in modules first, then
// the worker itself (ES modules evaluate in import order).
import './worker-builtins.ts';
import './worker.ts';

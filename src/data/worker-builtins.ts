// The modules compiled into the pre-built data worker (worker-bundle.ts), registered under
// their source URLs: a dataset spec naming one of them (ImageFolder, Shapes, ...) is served
// from the bundle instead of being imported — and compiled — again.

import { siblingModule } from '../core/module-url.ts';
import * as collate from './collate.ts';
import * as dataset from './dataset.ts';
import * as cifar from './datasets/cifar.ts';
import * as fake from './datasets/fake.ts';
import * as imageFolder from './datasets/image-folder.ts';
import * as mnist from './datasets/mnist.ts';
import * as shapes from './datasets/shapes.ts';
import { registerBuiltinModule } from './load.ts';
import * as transforms from './transforms/transforms.ts';

const modules: [string, Record<string, unknown>][] = [
  ['./collate.ts', collate],
  ['./dataset.ts', dataset],
  ['./datasets/cifar.ts', cifar],
  ['./datasets/fake.ts', fake],
  ['./datasets/image-folder.ts', imageFolder],
  ['./datasets/mnist.ts', mnist],
  ['./datasets/shapes.ts', shapes],
  ['./transforms/transforms.ts', transforms],
];
// import.meta.url is this file's source URL here too: the bundler keeps each module's own.
for (const [path, ns] of modules) registerBuiltinModule(siblingModule(path, import.meta.url).href, ns);

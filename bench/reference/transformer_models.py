"""PyTorch models of the transformer benchmarks (bench/train_step.ts, bench/ddp.ts).

torchvision is not installed here, so the models are the ones the parity fixtures restate
and tsddp's models are tested against: torchvision's VisionTransformer from
test/fixtures/vit/gen.py (the model of tsddp's models.vitB16 / vitTiny) and Karpathy's
nanoGPT GPT from test/fixtures/gpt/gen.py (tsddp's models.gpt), loaded from those files
(their fixture generation runs only as __main__). Used by bench/reference/train_step.py
and (imported lazily, only for ViT cases) bench/reference/ddp.py; neither this file nor
the fixtures ship with the package.
"""

import importlib.util
import os

_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(_root, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_vit = _load("tsddp_vit_reference", "test/fixtures/vit/gen.py")
_gpt = _load("tsddp_gpt_reference", "test/fixtures/gpt/gen.py")
VisionTransformer = _vit.VisionTransformer
GPT, GPTConfig = _gpt.GPT, _gpt.GPTConfig

# torchvision's vit_b_16 architecture, and tsddp's vitTiny (not a torchvision model: 32x32
# images, 4 px patches, DeiT-Ti's width at half its depth).
VIT_ARCHS = {
    "vit_tiny": dict(patch_size=4, num_layers=6, num_heads=3, hidden_dim=192, mlp_dim=768),
    "vit_b_16": _vit.ARCHS["vit_b_16"],
}


def vit(name, image_size, num_classes):
    """tsddp's models.vitTiny / vitB16({imageSize, numClasses}) in PyTorch."""
    return VisionTransformer(image_size=image_size, num_classes=num_classes, **VIT_ARCHS[name])


# nanoGPT's "baby GPT" of config/train_shakespeare_char.py (6 layers, 6 heads, width 384,
# character vocabulary 65), with dropout 0 and no biases (train.py's default bias=False).
GPT_SMALL = dict(vocab_size=65, n_layer=6, n_head=6, n_embd=384, dropout=0.0, bias=False)


def gpt_small(block_size):
    return GPT(GPTConfig(block_size=block_size, **GPT_SMALL))

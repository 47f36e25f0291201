"""PyTorch models of the transformer benchmarks (bench/train_step.ts, bench/ddp.ts).

torchvision is not installed here, so, as in test/fixtures/vit/gen.py and
test/fixtures/gpt/gen.py (copied from there), the models restate
  - torchvision's VisionTransformer (models/vision_transformer.py: MLPBlock, EncoderBlock,
    Encoder, VisionTransformer with its init), the model of tsddp's models.vitB16 / vitTiny;
  - Karpathy's nanoGPT GPT (model.py: LayerNorm with optional bias, CausalSelfAttention on
    the scaled_dot_product_attention path, MLP, Block, GPT with lm_head/wte weight tying
    and its init), the model of tsddp's models.gpt.
Used by bench/reference/train_step.py and (imported lazily, only for ViT cases)
bench/reference/ddp.py.
"""

import math
from collections import OrderedDict
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

# --- torchvision's VisionTransformer (copied from test/fixtures/vit/gen.py) -----------------

LayerNorm6 = partial(nn.LayerNorm, eps=1e-6)


class MLPBlock(nn.Sequential):
    """torchvision.ops.MLP(in, [mlp, in], GELU, dropout): Linear, GELU, Dropout, Linear, Dropout."""

    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(
            nn.Linear(in_dim, mlp_dim), nn.GELU(), nn.Dropout(dropout), nn.Linear(mlp_dim, in_dim), nn.Dropout(dropout)
        )
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = LayerNorm6(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = LayerNorm6(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, inp):
        h = self.ln_1(inp)
        a, _ = self.self_attention(h, h, h, need_weights=False)
        x = self.dropout(a) + inp
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        blocks = OrderedDict(
            (f"encoder_layer_{i}", EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout))
            for i in range(num_layers)
        )
        self.layers = nn.Sequential(blocks)
        self.ln = LayerNorm6(hidden_dim)

    def forward(self, x):
        return self.ln(self.layers(self.dropout(x + self.pos_embedding)))


class VisionTransformer(nn.Module):
    def __init__(
        self,
        image_size,
        patch_size,
        num_layers,
        num_heads,
        hidden_dim,
        mlp_dim,
        dropout=0.0,
        attention_dropout=0.0,
        num_classes=1000,
        representation_size=None,
    ):
        super().__init__()
        assert image_size % patch_size == 0
        self.image_size, self.patch_size, self.hidden_dim = image_size, patch_size, hidden_dim
        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        seq_length = (image_size // patch_size) ** 2 + 1
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout)
        heads = OrderedDict()
        if representation_size is None:
            heads["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads["act"] = nn.Tanh()
            heads["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads)

        fan_in = 3 * patch_size * patch_size
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
        if representation_size is not None:
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / hidden_dim))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def forward(self, x):
        n, _, h, w = x.shape
        assert h == self.image_size and w == self.image_size
        p = self.patch_size
        x = self.conv_proj(x).reshape(n, self.hidden_dim, (h // p) * (w // p)).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])

# --- nanoGPT's GPT (copied from test/fixtures/gpt/gen.py) -----------------------------------


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True


class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        assert c.n_embd % c.n_head == 0
        self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
        self.c_proj = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
        self.attn_dropout = nn.Dropout(c.dropout)
        self.resid_dropout = nn.Dropout(c.dropout)
        self.n_head = c.n_head
        self.n_embd = c.n_embd
        self.dropout = c.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (z.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = LayerNorm(c.n_embd, bias=c.bias)
        self.attn = CausalSelfAttention(c)
        self.ln_2 = LayerNorm(c.n_embd, bias=c.bias)
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(c.vocab_size, c.n_embd),
                wpe=nn.Embedding(c.block_size, c.n_embd),
                drop=nn.Dropout(c.dropout),
                h=nn.ModuleList([Block(c) for _ in range(c.n_layer)]),
                ln_f=LayerNorm(c.n_embd, bias=c.bias),
            )
        )
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c.n_layer))

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def get_num_params(self, non_embedding=True):
        n = sum(p.numel() for p in self.parameters())
        return n - self.transformer.wpe.weight.numel() if non_embedding else n

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.config.block_size
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss


# --- the benchmarks' builders ---------------------------------------------------------------

# torchvision's vit_b_16 architecture, and tsddp's vitTiny (not a torchvision model: 32x32
# images, 4 px patches, DeiT-Ti's width at half its depth).
VIT_ARCHS = {
    "vit_tiny": dict(patch_size=4, num_layers=6, num_heads=3, hidden_dim=192, mlp_dim=768),
    "vit_b_16": dict(patch_size=16, num_layers=12, num_heads=12, hidden_dim=768, mlp_dim=3072),
}


def vit(name, image_size, num_classes):
    """tsddp's models.vitTiny / vitB16({imageSize, numClasses}) in PyTorch."""
    return VisionTransformer(image_size=image_size, num_classes=num_classes, **VIT_ARCHS[name])


# nanoGPT's "baby GPT" of config/train_shakespeare_char.py (6 layers, 6 heads, width 384,
# character vocabulary 65), with dropout 0 and no biases (train.py's default bias=False).
GPT_SMALL = dict(vocab_size=65, n_layer=6, n_head=6, n_embd=384, dropout=0.0, bias=False)


def gpt_small(block_size):
    return GPT(GPTConfig(block_size=block_size, **GPT_SMALL))

"""PyTorch reference for bench/dataloader.ts: images/s of torch.utils.data.DataLoader alone.

Cases (the same work the TypeScript benchmark gives tsddp's DataLoader):

  shapes:W   Shapes 32x32 (a NumPy port of tsddp's procedural Shapes generator: same
             parameters, 3x3 supersampled coverage, triangular pixel noise), then
             RandomCrop(32, padding=4), RandomHorizontalFlip, ToTensor, Normalize on a
             PIL image, as torchvision's CIFAR10 does; batch --shapes-batch, W workers.
  folder:W   ImageFolder over --folder: PIL decode (torchvision's pil_loader:
             Image.open + convert('RGB')), RandomResizedCrop(224), RandomHorizontalFlip,
             ToTensor, Normalize(ImageNet mean/std); batch --folder-batch, W workers.

Every case is one epoch of DataLoader(shuffle=True, generator seeded, persistent_workers=False),
timed from creating the iterator (so worker start-up counts, as at every epoch of a
non-persistent loader) to the last batch.

torchvision is used when it imports (--impl auto); otherwise the transforms below, which
follow torchvision 0.2x's code line by line on PIL images and torch ops (same random
draws, same PIL calls) — torchvision's wheels are tied to one torch build, and a missing
or mismatched torchvision must not stop the benchmark.

Output: one JSON object per line on stdout. With --serve, reads one JSON request per
stdin line ({"cases": ["folder:0", ...]}) and answers each with a line, so the caller can
alternate with its own measurements without paying Python's start-up each round.

  python bench/reference/dataloader.py --folder DIR --cases folder:0,shapes:1
  python bench/reference/dataloader.py --folder DIR --breakdown
"""

import argparse
import json
import math
import os
import platform
import sys
import time

try:
    import numpy as np
    import torch
    from PIL import Image, ImageOps
    from torch.utils.data import DataLoader, Dataset
except ImportError as e:  # the TS side probes first; this is for direct use
    print(json.dumps({"error": f"cannot import torch/numpy/PIL: {e}"}))
    sys.exit(2)

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
# tsddp's SHAPES_MEAN / SHAPES_STD (src/data/datasets/shapes.ts).
SHAPES_MEAN = [0.4964, 0.4975, 0.5013]
SHAPES_STD = [0.2936, 0.2966, 0.2879]
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


# --- torchvision's transforms, or the same on PIL + torch ---------------------------------


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class RandomCrop:
    """transforms.RandomCrop(size, padding) with constant 0 padding (F_pil.pad -> ImageOps.expand)."""

    def __init__(self, size, padding):
        self.size = (size, size)
        self.padding = padding

    def __call__(self, img):
        if self.padding:
            img = ImageOps.expand(img, border=self.padding, fill=(0,) * len(img.getbands()))
        w, h = img.size
        th, tw = self.size
        if w == tw and h == th:
            i, j = 0, 0
        else:
            i = torch.randint(0, h - th + 1, size=(1,)).item()
            j = torch.randint(0, w - tw + 1, size=(1,)).item()
        return img.crop((j, i, j + tw, i + th))


class RandomResizedCrop:
    """transforms.RandomResizedCrop(size): get_params as torchvision, then crop + resize(BILINEAR)."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0)):
        self.size = [size, size]
        self.scale = scale
        self.ratio = ratio

    def get_params(self, img):
        width, height = img.size
        area = height * width
        log_ratio = torch.log(torch.tensor(self.ratio))
        for _ in range(10):
            target_area = area * torch.empty(1).uniform_(self.scale[0], self.scale[1]).item()
            aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = torch.randint(0, height - h + 1, size=(1,)).item()
                j = torch.randint(0, width - w + 1, size=(1,)).item()
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(self.ratio):
            w = width
            h = int(round(w / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h = height
            w = int(round(h * max(self.ratio)))
        else:
            w = width
            h = height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img):
        i, j, h, w = self.get_params(img)
        # F.resized_crop -> F_pil.crop + F_pil.resize (PIL's bilinear filter always antialiases).
        img = img.crop((j, i, j + w, i + h))
        return img.resize(tuple(self.size[::-1]), Image.BILINEAR)


class RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        if torch.rand(1) < self.p:
            return img.transpose(Image.FLIP_LEFT_RIGHT)
        return img


class ToTensor:
    """F.to_tensor for an 8-bit PIL image."""

    def __call__(self, pic):
        img = torch.from_numpy(np.array(pic, np.uint8, copy=True))
        img = img.view(pic.size[1], pic.size[0], len(pic.getbands()))
        img = img.permute((2, 0, 1)).contiguous()
        return img.to(dtype=torch.get_default_dtype()).div(255)


class Normalize:
    """F_t.normalize (not in place: cloned first)."""

    def __init__(self, mean, std):
        self.mean = mean
        self.std = std

    def __call__(self, tensor):
        tensor = tensor.clone()
        mean = torch.as_tensor(self.mean, dtype=tensor.dtype, device=tensor.device).view(-1, 1, 1)
        std = torch.as_tensor(self.std, dtype=tensor.dtype, device=tensor.device).view(-1, 1, 1)
        return tensor.sub_(mean).div_(std)


def make_transforms(impl):
    """(shapes transform, folder transform, the name of what made them)."""
    if impl in ("auto", "torchvision"):
        try:
            import torchvision
            import torchvision.transforms as T

            shapes = T.Compose(
                [T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(SHAPES_MEAN, SHAPES_STD)]
            )
            folder = T.Compose(
                [T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)]
            )
            return shapes, folder, f"torchvision {torchvision.__version__}"
        except Exception as e:  # noqa: BLE001 - any import failure means: use the port
            if impl == "torchvision":
                raise
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            sys.stderr.write(f"torchvision unavailable ({reason}); using the PIL + torch port\n")
    shapes = Compose([RandomCrop(32, 4), RandomHorizontalFlip(), ToTensor(), Normalize(SHAPES_MEAN, SHAPES_STD)])
    folder = Compose([RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    return shapes, folder, "PIL + torch port of torchvision's transforms"


# --- datasets -----------------------------------------------------------------------------


def pil_loader(path):
    """torchvision.datasets.folder.pil_loader."""
    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")


class ImageFolder(Dataset):
    """torchvision.datasets.ImageFolder's file order and loader."""

    def __init__(self, root, transform):
        self.classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.samples = []
        for label, c in enumerate(self.classes):
            for dirpath, _, fnames in sorted(os.walk(os.path.join(root, c), followlinks=True)):
                for fname in sorted(fnames):
                    if fname.lower().endswith(IMG_EXTENSIONS):
                        self.samples.append((os.path.join(dirpath, fname), label))
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        return self.transform(pil_loader(path)), label


def _luminance(c):
    return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]


def _inside(label, u, v):
    a = np.abs
    if label == 0:
        return u * u + v * v <= 1
    if label == 1:
        return (a(u) <= 0.85) & (a(v) <= 0.85)
    if label == 2:
        return (v <= 0.8) & (v >= -0.95) & (a(u) <= 0.95 * (v + 0.95) / 1.75)
    if label == 3:
        return ((a(u) <= 0.3) & (a(v) <= 0.95)) | ((a(v) <= 0.3) & (a(u) <= 0.95))
    if label == 4:
        r2 = u * u + v * v
        return (r2 <= 1) & (r2 >= 0.3)
    if label == 5:
        return a(u) + a(v) <= 1
    if label == 6:
        p = a(u + v) * math.sqrt(0.5)
        q = a(v - u) * math.sqrt(0.5)
        return ((p <= 0.25) & (q <= 1)) | ((q <= 0.25) & (p <= 1))
    if label == 7:
        m = np.maximum(a(u), a(v))
        return (m <= 0.9) & (m >= 0.55)
    if label == 8:
        return (u * u + v * v <= 1) & (v <= 0.2)
    return (a(u) <= 0.95) & (a(v) >= 0.2) & (a(v) <= 0.65)


class Shapes(Dataset):
    """tsddp's Shapes, rendered with NumPy: the same drawing, vectorized (the images differ
    from tsddp's, which uses its own random stream, but the distribution and work match)."""

    SUB = 3

    def __init__(self, size, image_size, transform, seed=0, noise=0.04):
        self.size = size
        self.S = image_size
        self.transform = transform
        self.seed = seed
        self.noise = noise
        S, n = image_size, self.SUB
        # Subsample centres: pixel x + (k + 0.5) / 3, as tsddp's edge supersampling.
        offs = (np.arange(S * n) + 0.5) / n
        self.sx = offs[None, :]
        self.sy = offs[:, None]
        self.px = np.arange(S)[None, :] / S - 0.5
        self.py = np.arange(S)[:, None] / S - 0.5

    def __len__(self):
        return self.size

    def render(self, i):
        rng = np.random.default_rng((self.seed, 0, i))
        S = self.S
        label = i % 10
        bg = rng.random(3)
        fg = rng.random(3)
        for _ in range(20):
            if abs(_luminance(fg) - _luminance(bg)) >= 0.3:
                break
            fg = rng.random(3)
        if abs(_luminance(fg) - _luminance(bg)) < 0.3:
            fg = np.zeros(3) if _luminance(bg) > 0.5 else np.ones(3)
        gx, gy = rng.uniform(-0.15, 0.15, 2)
        r = rng.uniform(0.2, 0.32) * S
        cx = rng.uniform(r + 1, S - r - 1)
        cy = rng.uniform(r + 1, S - r - 1)
        angle = rng.uniform(-0.2, 0.2)
        cos, sin = math.cos(angle) / r, math.sin(angle) / r
        dx = self.sx - cx
        dy = self.sy - cy
        inside = _inside(label, cos * dx + sin * dy, -sin * dx + cos * dy)
        a = inside.reshape(S, self.SUB, S, self.SUB).mean(axis=(1, 3))[..., None]
        shade = (gx * self.px + gy * self.py)[..., None]
        # Triangular noise from two random bytes per channel, as tsddp's.
        b = rng.integers(0, 256, size=(S, S, 3, 2), dtype=np.int16)
        noise = (b[..., 0] + b[..., 1] - 255) * (self.noise / math.sqrt(1 / 6) / 255)
        v = (1 - a) * (bg + shade) + a * fg + noise
        return np.clip(np.rint(v * 255), 0, 255).astype(np.uint8)

    def __getitem__(self, i):
        # torchvision's CIFAR10: a uint8 HWC array becomes a PIL image before the transforms.
        return self.transform(Image.fromarray(self.render(i))), i % 10


# --- measuring ----------------------------------------------------------------------------


def run_case(ds, batch_size, workers, seed):
    g = torch.Generator()
    g.manual_seed(seed)
    loader = DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=workers, generator=g)
    images = 0
    t0 = time.perf_counter()
    first = None
    for x, _ in loader:
        if first is None:
            first = time.perf_counter() - t0
        images += x.shape[0]
    seconds = time.perf_counter() - t0
    return {"images": images, "seconds": seconds, "first_s": first}


def breakdown(shapes_tf, folder_tf, folder, shapes_ds, limit):
    """Milliseconds per image of each stage, in this process, one thread."""
    out = {}
    files = [p for p, _ in ImageFolder(folder, None).samples][:limit]
    stages = {"decode": 0.0, "RandomResizedCrop": 0.0, "RandomHorizontalFlip": 0.0, "ToTensor": 0.0, "Normalize": 0.0}
    rrc = RandomResizedCrop(224)
    flip = RandomHorizontalFlip()
    tt = ToTensor()
    norm = Normalize(IMAGENET_MEAN, IMAGENET_STD)
    for rep in range(2):  # the first pass warms the page cache and PIL's plugins
        for k in stages:
            stages[k] = 0.0
        for p in files:
            t0 = time.perf_counter()
            img = pil_loader(p)
            t1 = time.perf_counter()
            img = rrc(img)
            t2 = time.perf_counter()
            img = flip(img)
            t3 = time.perf_counter()
            x = tt(img)
            t4 = time.perf_counter()
            norm(x)
            t5 = time.perf_counter()
            for k, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                stages[k] += dt
    out["folder"] = {k: v / len(files) * 1e3 for k, v in stages.items()}
    n = min(limit * 4, len(shapes_ds))
    t0 = time.perf_counter()
    arrays = [shapes_ds.render(i) for i in range(n)]
    t1 = time.perf_counter()
    for a in arrays:
        shapes_tf(Image.fromarray(a))
    t2 = time.perf_counter()
    out["shapes"] = {"render": (t1 - t0) / n * 1e3, "transforms": (t2 - t1) / n * 1e3}
    batch = [(torch.zeros(3, 224, 224), 0) for _ in range(32)]
    from torch.utils.data import default_collate

    t0 = time.perf_counter()
    for _ in range(10):
        default_collate(batch)
    out["collate_224_per_image_ms"] = (time.perf_counter() - t0) / 10 / 32 * 1e3

    # PIL's fixed cost per image: a 16x16 JPEG.
    import io
    import tempfile

    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (128, 128, 128)).save(buf, "JPEG")
    with tempfile.NamedTemporaryFile(suffix=".jpg", delete=False) as f:
        f.write(buf.getvalue())
    try:
        for _ in range(20):
            pil_loader(f.name)
        t0 = time.perf_counter()
        for _ in range(200):
            pil_loader(f.name)
        out["decode_16x16_ms"] = (time.perf_counter() - t0) / 200 * 1e3
    finally:
        os.unlink(f.name)

    # Starting and stopping one worker: an epoch of a 1-sample dataset.
    one = Shapes(1, 8, lambda img: torch.zeros(1))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in DataLoader(one, batch_size=1, num_workers=1):
            pass
        times.append(time.perf_counter() - t0)
    out["worker_start_s"] = sorted(times)[len(times) // 2]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", required=True)
    ap.add_argument("--cases", default="")
    ap.add_argument("--shapes-size", type=int, default=4096)
    ap.add_argument("--shapes-batch", type=int, default=128)
    ap.add_argument("--folder-batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--impl", choices=["auto", "torchvision", "pil"], default="auto")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--breakdown-images", type=int, default=128)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    shapes_tf, folder_tf, impl = make_transforms(args.impl)
    datasets = {
        "shapes": (Shapes(args.shapes_size, 32, shapes_tf, seed=args.seed), args.shapes_batch),
        "folder": (ImageFolder(args.folder, folder_tf), args.folder_batch),
    }
    info = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "pillow": Image.__version__,
        "numpy": np.__version__,
        "transforms": impl,
        "threads": torch.get_num_threads(),
        "folder_images": len(datasets["folder"][0]),
    }

    if args.breakdown:
        bd = breakdown(shapes_tf, folder_tf, args.folder, datasets["shapes"][0], args.breakdown_images)
        print(json.dumps({**info, "breakdown": bd}), flush=True)
        return

    def answer(cases):
        out = {}
        for case in cases:
            name, workers = case.split(":")
            ds, bs = datasets[name]
            out[case] = run_case(ds, bs, int(workers), args.seed)
        return {**info, "cases": out}

    if not args.serve:
        print(json.dumps(answer([c for c in args.cases.split(",") if c])), flush=True)
        return
    print(json.dumps({**info, "ready": True}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("quit"):
            break
        print(json.dumps(answer(req["cases"])), flush=True)


if __name__ == "__main__":
    main()

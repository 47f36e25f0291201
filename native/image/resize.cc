// The resized crop of uint8 [H, W, C] images, optionally mirrored and mapped through a
// per-channel uint8 -> float table (ToTensor + Normalize) into float32 [C, H, W]: the
// C++ twin of resizeHwc() in src/data/transforms/image.ts, which it must match bit for
// bit (test/data-image-addon.test.ts compares them). Same arithmetic in the same order:
// float32 weights read as double, the bilinear blend in double, rounded half up and
// clamped to uint8 — and compiled with -ffp-contract=off so no step becomes an FMA.
// JavaScript runs this loop at ~1.5 ms per 224x224 RGB image; the per-image cost of
// PIL's resize + ToTensor + Normalize is about the same, so the fused JS path alone could
// not make the ImageFolder loader faster than PyTorch's (bench/dataloader.ts).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "image.h"

namespace {

struct Taps {
  std::vector<int32_t> i0, i1;
  std::vector<float> l;  // a Float32Array in the JS twin: rounded to float, read back as double
};

// PyTorch's area_pixel_compute_source_index (align_corners=False), clamped at 0.
Taps taps(int nOut, int offset, int span) {
  Taps t{std::vector<int32_t>(nOut), std::vector<int32_t>(nOut), std::vector<float>(nOut)};
  const double scale = static_cast<double>(span) / nOut;
  for (int i = 0; i < nOut; i++) {
    const double src = std::max(scale * (i + 0.5) - 0.5, 0.0);
    const int lo = std::min(static_cast<int>(std::floor(src)), span - 1);
    t.i0[i] = offset + lo;
    t.i1[i] = offset + std::min(lo + 1, span - 1);
    t.l[i] = static_cast<float>(src - lo);
  }
  return t;
}

inline int blend(double my, double ly, double mx, double wx, int a, int b, int c, int d) {
  const double v = my * (mx * a + wx * b) + ly * (mx * c + wx * d);
  return v >= 255 ? 255 : v <= 0 ? 0 : static_cast<int>(v + 0.5);
}

// resizeHwc(src, [h, w, c], [top, left, cropH, cropW], [outH, outW], flip, tables | null, out)
// out: Uint8Array [outH, outW, c] without tables, Float32Array [c, outH, outW] with them.
Napi::Value ResizeHwc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto fail = [&](const char* what) { return Napi::TypeError::New(env, std::string("resizeHwc: ") + what); };
  if (info.Length() != 7) throw fail("expected 7 arguments");
  auto ints = [&](int i, size_t n) {
    if (!info[i].IsArray() || info[i].As<Napi::Array>().Length() != n) throw fail("bad geometry");
    std::vector<int> v(n);
    for (size_t k = 0; k < n; k++) v[k] = info[i].As<Napi::Array>().Get(k).As<Napi::Number>().Int32Value();
    return v;
  };
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw fail("the image must be a Uint8Array");
  auto src = info[0].As<Napi::Uint8Array>();
  const auto shape = ints(1, 3), win = ints(2, 4), size = ints(3, 2);
  const int h = shape[0], w = shape[1], c = shape[2];
  const int top = win[0], left = win[1], ch = win[2], cw = win[3];
  const int outH = size[0], outW = size[1];
  const bool flip = info[4].ToBoolean();
  if (h < 1 || w < 1 || c < 1 || src.ElementLength() != static_cast<size_t>(h) * w * c) throw fail("bad image shape");
  if (top < 0 || left < 0 || ch < 1 || cw < 1 || top + ch > h || left + cw > w) throw fail("window outside the image");
  if (outH < 1 || outW < 1) throw fail("bad output size");
  const size_t n = static_cast<size_t>(outH) * outW;
  const float* tables = nullptr;
  if (!info[5].IsNull()) {
    if (!info[5].IsTypedArray() || info[5].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array ||
        info[5].As<Napi::Float32Array>().ElementLength() != static_cast<size_t>(c) * 256)
      throw fail("tables must be a Float32Array of channels x 256");
    tables = info[5].As<Napi::Float32Array>().Data();
  }
  const auto outType = tables ? napi_float32_array : napi_uint8_array;
  if (!info[6].IsTypedArray() || info[6].As<Napi::TypedArray>().TypedArrayType() != outType ||
      info[6].As<Napi::TypedArray>().ElementLength() != n * c)
    throw fail("out has the wrong type or length");

  const Taps ty = taps(outH, top, ch), tx = taps(outW, left, cw);
  // Per output column: byte offsets of its two source pixels and its weight (mirrored for a flip).
  std::vector<int32_t> x0(outW), x1(outW);
  std::vector<double> lx(outW);
  for (int x = 0; x < outW; x++) {
    const int sx = flip ? outW - 1 - x : x;
    x0[x] = tx.i0[sx] * c;
    x1[x] = tx.i1[sx] * c;
    lx[x] = tx.l[sx];
  }
  // One loop for both outputs; `store` (inlined) writes one channel value of pixel (y, x).
  const uint8_t* s = src.Data();
  const size_t rowBytes = static_cast<size_t>(w) * c;
  auto resample = [&](auto store) {
    for (int y = 0; y < outH; y++) {
      const uint8_t* r0 = s + ty.i0[y] * rowBytes;
      const uint8_t* r1 = s + ty.i1[y] * rowBytes;
      const double ly = ty.l[y], my = 1 - ly;
      for (int x = 0; x < outW; x++) {
        const double wx = lx[x], mx = 1 - wx;
        const size_t o = static_cast<size_t>(y) * outW + x;
        for (int k = 0; k < c; k++)
          store(o, k, blend(my, ly, mx, wx, r0[x0[x] + k], r0[x1[x] + k], r1[x0[x] + k], r1[x1[x] + k]));
      }
    }
  };
  if (tables == nullptr) {
    uint8_t* out = info[6].As<Napi::Uint8Array>().Data();  // [outH, outW, c]
    resample([&](size_t o, int k, int v) { out[o * c + k] = static_cast<uint8_t>(v); });
  } else {
    float* out = info[6].As<Napi::Float32Array>().Data();  // [c, outH, outW]
    resample([&](size_t o, int k, int v) { out[k * n + o] = tables[k * 256 + v]; });
  }
  return env.Undefined();
}

}  // namespace

void initResize(Napi::Env env, Napi::Object exports) {
  exports.Set("resizeHwc", Napi::Function::New(env, ResizeHwc));
}

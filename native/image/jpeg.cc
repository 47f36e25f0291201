// JPEG decoding with libjpeg-turbo for ImageFolder (part of tsddp_image.node). It exists
// because sharp's per-image cost (thread hand-offs through libuv and libvips'
// pipeline: ~4 ms for a 400x300 JPEG, against ~1.3 ms for the decode itself) made the
// ImageFolder loader slower than PyTorch's PIL one. The decoder settings are libjpeg's
// defaults (ISLOW IDCT, fancy upsampling), which are PIL's and libvips': the pixels are
// the same bytes as `PIL.Image.open(f).convert('RGB')` (test/data-image-addon.test.ts).
//
// Only the clean case is handled here: a JPEG that libjpeg decodes to RGB without a
// warning. Anything else — CMYK/YCCK, a truncated or corrupt file, a non-JPEG — returns
// the reason as a string, and the caller decodes with sharp, which converts CMYK and
// reports errors by name. setjmp/longjmp is libjpeg's error protocol: the functions that
// call setjmp hold no C++ objects with destructors.
// clang-format off
#include <cstdio>  // before jpeglib.h, which uses FILE
#include <jpeglib.h>
// clang-format on
#include "image.h"

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <memory>
#include <cstdint>
#include <string>

namespace {

struct ErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg casts cinfo->err to this struct
  std::jmp_buf jump;
  bool warned = false;
  char message[JMSG_LENGTH_MAX] = {};
};

void onError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// level -1 is a warning (e.g. "Premature end of JPEG file"): libjpeg would go on and
// fill the rest with grey; remember it so the image goes to sharp instead. Trace
// messages (level >= 0) are ignored.
void onMessage(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (level < 0 && !err->warned) {
    err->warned = true;
    (*cinfo->err->format_message)(cinfo, err->message);
  }
}

struct Decoder {
  jpeg_decompress_struct cinfo{};
  ErrorManager err;
  Decoder() {
    cinfo.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = onError;
    err.pub.emit_message = onMessage;
    jpeg_create_decompress(&cinfo);  // cannot fail with a custom error_exit set beforehand
  }
  ~Decoder() { jpeg_destroy_decompress(&cinfo); }
};

bool readHeader(Decoder& d, const uint8_t* data, size_t size) {
  if (setjmp(d.err.jump)) return false;
  jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&d.cinfo, TRUE);
  return true;
}

bool readPixels(Decoder& d, uint8_t* out) {
  if (setjmp(d.err.jump)) return false;
  d.cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d.cinfo);
  const size_t stride = static_cast<size_t>(d.cinfo.output_width) * 3;
  JSAMPROW rows[16];
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    const JDIMENSION y = d.cinfo.output_scanline;
    const JDIMENSION n = std::min<JDIMENSION>(16, d.cinfo.output_height - y);
    for (JDIMENSION i = 0; i < n; i++) rows[i] = out + (y + i) * stride;
    jpeg_read_scanlines(&d.cinfo, rows, n);
  }
  jpeg_finish_decompress(&d.cinfo);
  return true;
}

// The result of one decode: pixels on success, else the reason this decoder declined.
struct Decoded {
  uint8_t* pixels = nullptr;  // malloc'd, width * height * 3 bytes
  size_t width = 0;
  size_t height = 0;
  std::string declined;
};

// Runs on any thread: touches no JavaScript value.
Decoded decode(const uint8_t* data, size_t size) {
  Decoded out;
  Decoder d;
  if (!readHeader(d, data, size)) {
    out.declined = d.err.message;
    return out;
  }
  const J_COLOR_SPACE space = d.cinfo.jpeg_color_space;
  if (space != JCS_YCbCr && space != JCS_RGB && space != JCS_GRAYSCALE) {
    out.declined = "colour space " + std::to_string(space) + " is not YCbCr, RGB or grey";
    return out;
  }
  out.width = d.cinfo.image_width;
  out.height = d.cinfo.image_height;
  out.pixels = static_cast<uint8_t*>(std::malloc(out.width * out.height * 3));
  if (out.pixels == nullptr) {
    out.declined = "out of memory";
  } else if (!readPixels(d, out.pixels)) {
    out.declined = d.err.message;
  } else if (d.err.warned) {
    out.declined = d.err.message;
  } else if (d.cinfo.output_width != out.width || d.cinfo.output_height != out.height) {
    out.declined = "output size differs from the header's";
  }
  if (!out.declined.empty()) {
    std::free(out.pixels);
    out.pixels = nullptr;
  }
  return out;
}

// { data: ArrayBuffer, width, height } (uint8 RGB, row major; the buffer takes ownership
// of the pixels) or the reason as a string. Plain N-API calls that report failure instead
// of throwing: this also runs as an async completion, possibly while a worker thread's
// environment is being torn down, when every call fails and nothing may throw.
napi_status toJs(napi_env env, Decoded& r, napi_value* out) {
  if (r.pixels == nullptr) return napi_create_string_utf8(env, r.declined.c_str(), r.declined.size(), out);
  napi_value data, width, height;
  auto release = [](napi_env, void* p, void*) { std::free(p); };
  napi_status s = napi_create_external_arraybuffer(env, r.pixels, r.width * r.height * 3, release, nullptr, &data);
  if (s != napi_ok) return s;
  r.pixels = nullptr;  // owned by the ArrayBuffer now
  if ((s = napi_create_double(env, static_cast<double>(r.width), &width)) != napi_ok) return s;
  if ((s = napi_create_double(env, static_cast<double>(r.height), &height)) != napi_ok) return s;
  if ((s = napi_create_object(env, out)) != napi_ok) return s;
  if ((s = napi_set_named_property(env, *out, "data", data)) != napi_ok) return s;
  if ((s = napi_set_named_property(env, *out, "width", width)) != napi_ok) return s;
  return napi_set_named_property(env, *out, "height", height);
}

Napi::Uint8Array bytesArg(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(info.Env(), std::string(fn) + ": expected a Uint8Array of encoded bytes");
  return info[0].As<Napi::Uint8Array>();
}

// decodeJpeg(bytes: Uint8Array): the pixels, or why not (see toJs).
Napi::Value DecodeJpeg(const Napi::CallbackInfo& info) {
  auto bytes = bytesArg(info, "decodeJpeg");
  Decoded r = decode(bytes.Data(), bytes.ByteLength());
  napi_value out;
  const napi_status s = toJs(info.Env(), r, &out);
  std::free(r.pixels);  // null unless toJs failed
  NAPI_THROW_IF_FAILED(info.Env(), s, Napi::Value());
  return Napi::Value(info.Env(), out);
}

// decodeJpegAsync(bytes): the same on libuv's thread pool, as a Promise. A reference keeps
// `bytes` alive until it settles; the caller must not modify them meanwhile.
struct DecodeJob {
  napi_async_work work = nullptr;
  napi_deferred deferred = nullptr;
  napi_ref bytes = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0;
  Decoded result;
};

void executeJob(napi_env, void* p) {
  auto* job = static_cast<DecodeJob*>(p);
  job->result = decode(job->data, job->size);
}

void completeJob(napi_env env, napi_status status, void* p) {
  std::unique_ptr<DecodeJob> job(static_cast<DecodeJob*>(p));
  napi_value value;
  if (status == napi_ok && toJs(env, job->result, &value) == napi_ok) {
    napi_resolve_deferred(env, job->deferred, value);
  } else if (napi_create_string_utf8(env, "decodeJpegAsync: cancelled", NAPI_AUTO_LENGTH, &value) == napi_ok) {
    napi_value error;
    if (napi_create_error(env, nullptr, value, &error) == napi_ok) napi_reject_deferred(env, job->deferred, error);
  }
  std::free(job->result.pixels);  // null unless it was not handed to JavaScript
  napi_delete_reference(env, job->bytes);
  napi_delete_async_work(env, job->work);
}

Napi::Value DecodeJpegAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto bytes = bytesArg(info, "decodeJpegAsync");
  auto job = std::make_unique<DecodeJob>();
  job->data = bytes.Data();
  job->size = bytes.ByteLength();
  napi_value promise, name;
  NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &job->deferred, &promise), Napi::Value());
  NAPI_THROW_IF_FAILED(env, napi_create_reference(env, bytes, 1, &job->bytes), Napi::Value());
  NAPI_THROW_IF_FAILED(env, napi_create_string_utf8(env, "tsddp:decodeJpeg", NAPI_AUTO_LENGTH, &name),
                       Napi::Value());
  NAPI_THROW_IF_FAILED(
      env, napi_create_async_work(env, nullptr, name, executeJob, completeJob, job.get(), &job->work),
      Napi::Value());
  NAPI_THROW_IF_FAILED(env, napi_queue_async_work(env, job->work), Napi::Value());
  job.release();  // completeJob owns it
  return Napi::Value(env, promise);
}

#define TSDDP_STR2(x) #x
#define TSDDP_STR(x) TSDDP_STR2(x)

}  // namespace

void initJpeg(Napi::Env env, Napi::Object exports) {
  exports.Set("decodeJpeg", Napi::Function::New(env, DecodeJpeg));
  exports.Set("decodeJpegAsync", Napi::Function::New(env, DecodeJpegAsync));
#ifdef LIBJPEG_TURBO_VERSION
  exports.Set("jpegVersion", Napi::String::New(env, "libjpeg-turbo " TSDDP_STR(LIBJPEG_TURBO_VERSION)));
#else
  exports.Set("jpegVersion", Napi::String::New(env, "libjpeg " TSDDP_STR(JPEG_LIB_VERSION)));
#endif
}

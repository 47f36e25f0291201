// Module registration of tsddp_image.node (see image.h).
#include "image.h"

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  initJpeg(env, exports);
  initResize(env, exports);
  return exports;
}
NODE_API_MODULE(tsddp_image, Init)

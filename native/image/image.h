// tsddp_image.node: the data workers' image kernels — JPEG decoding (jpeg.cc) and the
// fused resized crop (resize.cc). A separate addon from tsddp.node so worker threads load
// it without libtorch; plain C++ over node-addon-api.
#pragma once
#include <napi.h>

void initJpeg(Napi::Env env, Napi::Object exports);
void initResize(Napi::Env env, Napi::Object exports);

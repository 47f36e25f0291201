// A c10 future's error, carried through a then()/thenAsync() callback.
#pragma once

#include <ATen/core/ivalue.h>

#include <exception>

namespace tsddp {

// For a Future::then / thenAsync callback: c10 runs it even when the parent future failed,
// and completes the child with whatever it returns; this rethrows the parent's error first,
// so the child fails with it (as PyTorch's Python callbacks do by calling fut.value()).
inline void rethrowIfFailed(c10::ivalue::Future& parent) {
  if (parent.hasError()) std::rethrow_exception(parent.exception_ptr());
}

}  // namespace tsddp

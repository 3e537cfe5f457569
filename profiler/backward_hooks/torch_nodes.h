// Autograd nodes as this torch holds them. The hooks are built against the
// job's own torch, and the pointers differ between versions: recent torch
// holds nodes in c10::intrusive_ptr; up to 2.11 (the torch of the lent GPU
// machines, scripts/gpu-check) in std::shared_ptr, Node deriving from
// enable_shared_from_this, and a python Function holds a std::weak_ptr to its
// node. The templates compile only the branch for this torch.
#pragma once

#include <ATen/core/Tensor.h>

#include <type_traits>
#include <utility>

namespace gcprof_hooks {

// What a tensor's grad_fn() holds its node with.
using NodePtr = std::decay_t<decltype(std::declval<at::Tensor>().grad_fn())>;

// A share of `node`, which something else owns.
template <typename Ptr = NodePtr, typename N>
Ptr shareNode(N* node) {
  if constexpr (requires { Ptr::unsafe_reclaim_from_nonowning(node); })
    return Ptr::unsafe_reclaim_from_nonowning(node);
  else
    return node->shared_from_this();
}

// The node a python grad_fn object holds (`cdata`). A weak one is locked for
// the moment only: the tensor's grad_fn owns the node and outlives the call.
template <typename Held>
auto* heldNode(const Held& held) {
  if constexpr (requires { held.lock(); })
    return held.lock().get();
  else
    return held.get();
}

}  // namespace gcprof_hooks

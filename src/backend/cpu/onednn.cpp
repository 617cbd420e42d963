#include "onednn.h"

#include <string>

#include "rcuda/core/error.h"

namespace rcuda::cpu::onednn {

dnnl::engine& engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory::desc f32_desc(const dnnl::memory::dims& dims, bool channels_last) {
  using tag = dnnl::memory::format_tag;
  tag format = tag::undef;
  switch (dims.size()) {
    case 2:
      format = tag::nc;
      break;
    case 3:
      format = channels_last ? tag::nwc : tag::ncw;
      break;
    case 4:
      format = channels_last ? tag::nhwc : tag::nchw;
      break;
    default:
      throw InternalError("oneDNN: unsupported rank " + std::to_string(dims.size()));
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, format);
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& t) {
  return dnnl::memory(desc, engine(), t.data_ptr());
}

void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args,
             const char* op) {
  try {
    prim.execute(stream(), args);
    stream().wait();
  } catch (const dnnl::error& e) {
    throw InternalError(std::string(op) + ": oneDNN failed: " + e.what());
  }
}

}  // namespace rcuda::cpu::onednn

// float32 recurrent layers through oneDNN's RNN primitives (Note [oneDNN recurrent layers] in
// rnn_cpu.h): lstm_forward/backward, lbr_gru_forward/backward (linear-before-reset: PyTorch's
// GRU) and vanilla_rnn_forward/backward with tanh or relu, one primitive per layer.
#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "onednn.h"
#include "rcuda/core/error.h"
#include "rnn_cpu.h"

namespace rcuda::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

enum class Pass : uint8_t { Forward, Backward };

// What one layer's primitive depends on.
struct LayerKey {
  Pass pass;
  RnnMode mode;
  int64_t T, N, In, H, D;
  bool training;
  auto tie() const { return std::tie(pass, mode, T, N, In, H, D, training); }
  bool operator<(const LayerKey& o) const { return tie() < o.tie(); }
};

int64_t bias_gates(RnnMode mode) {
  return Backend::rnn_gates(mode) + (mode == RnnMode::Gru ? 1 : 0);
}

// oneDNN's gate g is PyTorch's gate pytorch_gate(g): LSTM (i, f, g, o) and the plain RNNs match;
// oneDNN's GRU orders (u, r, o), PyTorch's (r, z, n), with u = z and o = n.
int64_t pytorch_gate(RnnMode mode, int64_t g) {
  if (mode != RnnMode::Gru || g == 2) return g;
  return 1 - g;
}

memory::desc f32(const memory::dims& dims, tag format) {
  return memory::desc(dims, memory::data_type::f32, format);
}

// The user-side descriptors of one layer (weights in `any`: the primitive chooses).
struct LayerDescs {
  memory::desc src_layer, state, weights_layer, weights_iter, bias, dst_layer;
};
LayerDescs layer_descs(const LayerKey& k) {
  const int64_t G = Backend::rnn_gates(k.mode);
  return {f32({k.T, k.N, k.In}, tag::tnc),
          f32({1, k.D, k.N, k.H}, tag::ldnc),
          f32({1, k.D, k.In, G, k.H}, tag::any),
          f32({1, k.D, k.H, G, k.H}, tag::any),
          f32({1, k.D, bias_gates(k.mode), k.H}, tag::ldgo),
          f32({k.T, k.N, k.D * k.H}, tag::tnc)};
}

// A primitive and its descriptor (for the layouts and sizes it wants).
struct LayerPrimitive {
  dnnl::primitive primitive;
  dnnl::rnn_primitive_desc_base pd;
};

LayerPrimitive make_layer(const LayerKey& k) {
  const LayerDescs m = layer_descs(k);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::engine& engine = onednn::engine();
  const auto dir = k.D == 2 ? dnnl::rnn_direction::bidirectional_concat
                            : dnnl::rnn_direction::unidirectional_left2right;
  const auto prop = k.pass == Pass::Forward && !k.training ? dnnl::prop_kind::forward_inference
                                                           : dnnl::prop_kind::forward_training;
  const auto back = dnnl::prop_kind::backward;
  switch (k.mode) {
    case RnnMode::Lstm: {
      const dnnl::lstm_forward::primitive_desc f(
          {prop, dir, m.src_layer, m.state, m.state, m.weights_layer, m.weights_iter, m.bias,
           m.dst_layer, m.state, m.state},
          attr, engine);
      if (k.pass == Pass::Forward) return {dnnl::lstm_forward(f), f};
      const dnnl::lstm_backward::primitive_desc b(
          {back,           dir,     m.src_layer,     m.state,        m.state, m.weights_layer,
           m.weights_iter, m.bias,  m.dst_layer,     m.state,        m.state, m.src_layer,
           m.state,        m.state, m.weights_layer, m.weights_iter, m.bias,  m.dst_layer,
           m.state,        m.state},
          attr, engine, f);
      return {dnnl::lstm_backward(b), b};
    }
    case RnnMode::Gru: {
      const dnnl::lbr_gru_forward::primitive_desc f(
          {prop, dir, m.src_layer, m.state, m.weights_layer, m.weights_iter, m.bias, m.dst_layer,
           m.state},
          attr, engine);
      if (k.pass == Pass::Forward) return {dnnl::lbr_gru_forward(f), f};
      const dnnl::lbr_gru_backward::primitive_desc b(
          {back, dir, m.src_layer, m.state, m.weights_layer, m.weights_iter, m.bias, m.dst_layer,
           m.state, m.src_layer, m.state, m.weights_layer, m.weights_iter, m.bias, m.dst_layer,
           m.state},
          attr, engine, f);
      return {dnnl::lbr_gru_backward(b), b};
    }
    case RnnMode::RnnTanh:
    case RnnMode::RnnRelu: {
      const auto act = k.mode == RnnMode::RnnTanh ? dnnl::algorithm::eltwise_tanh
                                                  : dnnl::algorithm::eltwise_relu;
      const dnnl::vanilla_rnn_forward::primitive_desc f(
          {prop, act, dir, m.src_layer, m.state, m.weights_layer, m.weights_iter, m.bias,
           m.dst_layer, m.state},
          attr, engine);
      if (k.pass == Pass::Forward) return {dnnl::vanilla_rnn_forward(f), f};
      const dnnl::vanilla_rnn_backward::primitive_desc b(
          {back, act, dir, m.src_layer, m.state, m.weights_layer, m.weights_iter, m.bias,
           m.dst_layer, m.state, m.src_layer, m.state, m.weights_layer, m.weights_iter, m.bias,
           m.dst_layer, m.state},
          attr, engine, f);
      return {dnnl::vanilla_rnn_backward(b), b};
    }
  }
  throw InternalError("rnn: unknown recurrent mode");
}

// Making a primitive generates its kernels (milliseconds); a training loop repeats a few shapes,
// so primitives are kept by key, the whole map dropped beyond kCacheCapacity entries.
constexpr size_t kCacheCapacity = 128;

std::shared_ptr<const LayerPrimitive> layer_primitive(const LayerKey& key) {
  static std::mutex mutex;
  static auto* cache = new std::map<LayerKey, std::shared_ptr<const LayerPrimitive>>();
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache->find(key); it != cache->end()) return it->second;
  }
  auto made = std::make_shared<const LayerPrimitive>(make_layer(key));
  const std::lock_guard<std::mutex> lock(mutex);
  if (cache->size() >= kCacheCapacity) cache->clear();
  cache->emplace(key, made);
  return made;
}

Tensor bytes(size_t n) {
  return Tensor::empty({static_cast<int64_t>(std::max<size_t>(n, 1))}, DType::UInt8);
}
Tensor floats(int64_t n) { return Tensor::empty({std::max<int64_t>(n, 1)}, DType::Float32); }
Tensor zero_floats(int64_t n) {
  Tensor t = floats(n);
  std::fill_n(t.data<float>(), std::max<int64_t>(n, 1), 0.0f);
  return t;
}

// The sizes of one call.
struct Plan {
  RnnMode mode;
  int64_t T, N, I, H, D, L, G;
  bool has_biases, training;
  int64_t input_size(int64_t l) const { return l == 0 ? I : D * H; }
  int64_t state_size() const { return D * N * H; }  // one layer's hy (or cy)
  LayerKey key(Pass pass, int64_t l) const {
    return {pass, mode, T, N, input_size(l), H, D, training};
  }
};

Plan plan_of(const RnnArgs& a, const Tensor& input) {
  return {a.mode,       input.size(0), input.size(1), input.size(2),
          a.hidden,     a.directions,  a.layers,      Backend::rnn_gates(a.mode),
          a.has_biases, a.training};
}

// Where layer l's pieces sit in the reserve, in bytes (each start 64-byte aligned).
struct LayerSlots {
  size_t workspace = 0, workspace_size = 0, output = 0, hy = 0, cy = 0;
};
size_t align64(size_t n) { return (n + 63) / 64 * 64; }

std::vector<LayerSlots> reserve_layout(const Plan& p, size_t* total) {
  std::vector<LayerSlots> slots(static_cast<size_t>(p.L));
  size_t at = 0;
  const size_t state = static_cast<size_t>(p.state_size()) * sizeof(float);
  for (int64_t l = 0; l < p.L; ++l) {
    LayerSlots& s = slots[l];
    s.workspace_size = layer_primitive(p.key(Pass::Forward, l))->pd.workspace_desc().get_size();
    s.workspace = at;
    at = align64(at + s.workspace_size);
    s.output = at;
    if (l < p.L - 1) at = align64(at + static_cast<size_t>(p.T * p.N * p.D * p.H) * sizeof(float));
    s.hy = at;
    at = align64(at + state);
    s.cy = at;
    if (p.mode == RnnMode::Lstm) at = align64(at + state);
  }
  *total = at;
  return slots;
}

// One block's PyTorch-layout tensors (biases undefined when the layers have none).
struct BlockTensors {
  Tensor w_ih, w_hh, b_ih, b_hh;
};
BlockTensors block_of(const Plan& p, const Backend::TensorList& w, int64_t block) {
  const size_t k = static_cast<size_t>(block * (p.has_biases ? 4 : 2));
  return {w[k], w[k + 1], p.has_biases ? w[k + 2] : Tensor(), p.has_biases ? w[k + 3] : Tensor()};
}

// ldigo [1, D, In, G, H] from each direction's PyTorch [G * H, In]: a transpose per gate.
void pack_weights(const Plan& p, float* ldigo, const std::vector<const float*>& w, int64_t In) {
  const int64_t G = p.G, H = p.H;
  for (int64_t d = 0; d < p.D; ++d)
    for (int64_t g = 0; g < G; ++g) {
      const float* src = w[d] + pytorch_gate(p.mode, g) * H * In;
      for (int64_t o = 0; o < H; ++o)
        for (int64_t i = 0; i < In; ++i) ldigo[((d * In + i) * G + g) * H + o] = src[o * In + i];
    }
}
void unpack_weights(const Plan& p, const float* ldigo, const std::vector<float*>& w, int64_t In) {
  const int64_t G = p.G, H = p.H;
  for (int64_t d = 0; d < p.D; ++d)
    for (int64_t g = 0; g < G; ++g) {
      float* dst = w[d] + pytorch_gate(p.mode, g) * H * In;
      for (int64_t o = 0; o < H; ++o)
        for (int64_t i = 0; i < In; ++i) dst[o * In + i] = ldigo[((d * In + i) * G + g) * H + o];
    }
}

// ldgo [1, D, Gb, H]: b_ih + b_hh per gate; GRU's candidate keeps b_in (gate 2) and b_hn (3).
Tensor pack_bias(const Plan& p, const std::vector<BlockTensors>& blocks) {
  const int64_t Gb = bias_gates(p.mode), H = p.H;
  Tensor bias = zero_floats(p.D * Gb * H);
  if (!p.has_biases) return bias;
  float* b = bias.data<float>();
  for (int64_t d = 0; d < p.D; ++d) {
    const float* b_ih = blocks[d].b_ih.data<float>();
    const float* b_hh = blocks[d].b_hh.data<float>();
    for (int64_t g = 0; g < p.G; ++g) {
      const int64_t pg = pytorch_gate(p.mode, g);
      const bool apart = p.mode == RnnMode::Gru && g == 2;
      for (int64_t o = 0; o < H; ++o) {
        b[(d * Gb + g) * H + o] = b_ih[pg * H + o] + (apart ? 0.0f : b_hh[pg * H + o]);
        if (apart) b[(d * Gb + 3) * H + o] = b_hh[pg * H + o];
      }
    }
  }
  return bias;
}
void unpack_bias(const Plan& p, const float* b, const std::vector<BlockTensors>& grads) {
  const int64_t Gb = bias_gates(p.mode), H = p.H;
  for (int64_t d = 0; d < p.D; ++d) {
    float* g_ih = grads[d].b_ih.data<float>();
    float* g_hh = grads[d].b_hh.data<float>();
    for (int64_t g = 0; g < p.G; ++g) {
      const int64_t pg = pytorch_gate(p.mode, g);
      const bool apart = p.mode == RnnMode::Gru && g == 2;
      for (int64_t o = 0; o < H; ++o) {
        g_ih[pg * H + o] = b[(d * Gb + g) * H + o];
        g_hh[pg * H + o] = b[(d * Gb + (apart ? 3 : g)) * H + o];
      }
    }
  }
}

// A buffer in the layout `wanted`, filled from the plain ldigo buffer `plain` (described by
// plain_md): the buffer itself when the layouts agree, else a reorder into a new one.
struct Operand {
  memory mem;
  Tensor buffer;  // keeps the memory alive
};
Operand in_layout(const Tensor& plain, const memory::desc& plain_md, const memory::desc& wanted) {
  memory user(plain_md, onednn::engine(), plain.data_ptr());
  if (plain_md == wanted) return {user, plain};
  Tensor buffer = bytes(wanted.get_size());
  memory mem(wanted, onednn::engine(), buffer.data_ptr());
  dnnl::reorder(user, mem).execute(onednn::stream(), user, mem);
  onednn::stream().wait();
  return {mem, buffer};
}

memory mem_at(const memory::desc& md, void* p) { return memory(md, onednn::engine(), p); }

// The packed weights of layer l: ldigo buffers and the descriptors they are in.
struct PackedWeights {
  Tensor layer, iter, bias;
  memory::desc layer_md, iter_md;
};
PackedWeights pack_layer(const Plan& p, int64_t l, const std::vector<BlockTensors>& blocks) {
  const int64_t In = p.input_size(l);
  PackedWeights w;
  w.layer_md = f32({1, p.D, In, p.G, p.H}, tag::ldigo);
  w.iter_md = f32({1, p.D, p.H, p.G, p.H}, tag::ldigo);
  w.layer = floats(p.D * In * p.G * p.H);
  w.iter = floats(p.D * p.H * p.G * p.H);
  std::vector<const float*> ih, hh;
  for (const BlockTensors& b : blocks) {
    ih.push_back(b.w_ih.data<float>());
    hh.push_back(b.w_hh.data<float>());
  }
  pack_weights(p, w.layer.data<float>(), ih, In);
  pack_weights(p, w.iter.data<float>(), hh, p.H);
  w.bias = pack_bias(p, blocks);
  return w;
}

std::vector<BlockTensors> layer_blocks(const Plan& p, const Backend::TensorList& w, int64_t l) {
  std::vector<BlockTensors> blocks;
  for (int64_t d = 0; d < p.D; ++d) blocks.push_back(block_of(p, w, l * p.D + d));
  return blocks;
}

char* at(const Tensor& t, size_t offset) { return static_cast<char*>(t.data_ptr()) + offset; }

}  // namespace

Tensor rnn_f32(const RnnArgs& args, const Tensor& out, const Tensor& hy, const Tensor& cy,
               const Tensor& input, const Tensor& hx, const Tensor& cx,
               const Backend::TensorList& weights) {
  const Plan p = plan_of(args, input);
  const bool lstm = p.mode == RnnMode::Lstm;
  size_t total = 0;
  const std::vector<LayerSlots> slots = reserve_layout(p, &total);
  // Inference keeps the layer outputs in the same layout, with no workspace to fill.
  const Tensor reserve = bytes(total);
  const size_t state = static_cast<size_t>(p.state_size());
  const float* x = input.data<float>();
  for (int64_t l = 0; l < p.L; ++l) {
    const std::shared_ptr<const LayerPrimitive> prim = layer_primitive(p.key(Pass::Forward, l));
    const dnnl::rnn_primitive_desc_base& pd = prim->pd;
    const LayerDescs m = layer_descs(p.key(Pass::Forward, l));
    const PackedWeights w = pack_layer(p, l, layer_blocks(p, weights, l));
    const Operand wl = in_layout(w.layer, w.layer_md, pd.weights_layer_desc());
    const Operand wi = in_layout(w.iter, w.iter_md, pd.weights_iter_desc());
    float* y =
        l == p.L - 1 ? out.data<float>() : reinterpret_cast<float*>(at(reserve, slots[l].output));
    float* h_last = reinterpret_cast<float*>(at(reserve, slots[l].hy));
    float* c_last = reinterpret_cast<float*>(at(reserve, slots[l].cy));
    const Tensor scratchpad = bytes(pd.scratchpad_desc().get_size());
    std::unordered_map<int, memory> run = {
        {DNNL_ARG_SRC_LAYER, mem_at(m.src_layer, const_cast<float*>(x))},
        {DNNL_ARG_SRC_ITER, mem_at(m.state, hx.data<float>() + l * state)},
        {DNNL_ARG_WEIGHTS_LAYER, wl.mem},
        {DNNL_ARG_WEIGHTS_ITER, wi.mem},
        {DNNL_ARG_BIAS, mem_at(m.bias, w.bias.data_ptr())},
        {DNNL_ARG_DST_LAYER, mem_at(m.dst_layer, y)},
        {DNNL_ARG_DST_ITER, mem_at(m.state, h_last)},
        {DNNL_ARG_SCRATCHPAD, mem_at(pd.scratchpad_desc(), scratchpad.data_ptr())}};
    if (lstm) {
      run[DNNL_ARG_SRC_ITER_C] = mem_at(m.state, cx.data<float>() + l * state);
      run[DNNL_ARG_DST_ITER_C] = mem_at(m.state, c_last);
    }
    if (p.training)
      run[DNNL_ARG_WORKSPACE] = mem_at(pd.workspace_desc(), at(reserve, slots[l].workspace));
    onednn::execute(prim->primitive, run, "rnn");
    std::memcpy(hy.data<float>() + l * state, h_last, state * sizeof(float));
    if (lstm) std::memcpy(cy.data<float>() + l * state, c_last, state * sizeof(float));
    x = y;
  }
  return p.training ? reserve : Tensor();
}

void rnn_backward_f32(const RnnArgs& args, const Tensor& grad_input, const Tensor& grad_hx,
                      const Tensor& grad_cx, const Backend::TensorList& grad_weights,
                      const Tensor& grad_out, const Tensor& grad_hy, const Tensor& grad_cy,
                      const Tensor& input, const Tensor& hx, const Tensor& cx,
                      const Backend::TensorList& weights, const Tensor& out,
                      const Tensor& reserve) {
  Plan p = plan_of(args, input);
  p.training = true;  // the reserve was laid out by a training forward
  const bool lstm = p.mode == RnnMode::Lstm;
  size_t total = 0;
  const std::vector<LayerSlots> slots = reserve_layout(p, &total);
  const int64_t state = p.state_size();
  const Tensor zero_state = zero_floats(state);
  Tensor dy = grad_out;  // the gradient of layer l's output
  for (int64_t l = p.L - 1; l >= 0; --l) {
    const std::shared_ptr<const LayerPrimitive> prim = layer_primitive(p.key(Pass::Backward, l));
    const dnnl::rnn_primitive_desc_base& pd = prim->pd;
    const LayerDescs m = layer_descs(p.key(Pass::Backward, l));
    const int64_t In = p.input_size(l);
    const PackedWeights w = pack_layer(p, l, layer_blocks(p, weights, l));
    const Operand wl = in_layout(w.layer, w.layer_md, pd.weights_layer_desc());
    const Operand wi = in_layout(w.iter, w.iter_md, pd.weights_iter_desc());
    const void* x = l == 0 ? input.data_ptr() : at(reserve, slots[l - 1].output);
    const void* y = l == p.L - 1 ? out.data_ptr() : at(reserve, slots[l].output);
    const Tensor dx = l == 0 && grad_input.defined() ? grad_input : floats(p.T * p.N * In);
    const Tensor dh = grad_hx.defined() ? grad_hx.narrow(0, l * p.D, p.D) : floats(state);
    const Tensor dc = lstm && grad_cx.defined() ? grad_cx.narrow(0, l * p.D, p.D) : floats(state);
    const memory::desc dwl_md = pd.diff_weights_layer_desc(), dwi_md = pd.diff_weights_iter_desc();
    const Tensor dwl = bytes(dwl_md.get_size()), dwi = bytes(dwi_md.get_size());
    const Tensor db = zero_floats(p.D * bias_gates(p.mode) * p.H);
    std::memset(dwl.data_ptr(), 0, dwl_md.get_size());
    std::memset(dwi.data_ptr(), 0, dwi_md.get_size());
    const Tensor scratchpad = bytes(pd.scratchpad_desc().get_size());
    auto state_of = [&](const Tensor& t) {
      return t.defined() ? t.data<float>() + l * state : zero_state.data<float>();
    };
    std::unordered_map<int, memory> run = {
        {DNNL_ARG_SRC_LAYER, mem_at(m.src_layer, const_cast<void*>(x))},
        {DNNL_ARG_SRC_ITER, mem_at(m.state, hx.data<float>() + l * state)},
        {DNNL_ARG_WEIGHTS_LAYER, wl.mem},
        {DNNL_ARG_WEIGHTS_ITER, wi.mem},
        {DNNL_ARG_BIAS, mem_at(m.bias, w.bias.data_ptr())},
        {DNNL_ARG_DST_LAYER, mem_at(m.dst_layer, const_cast<void*>(y))},
        {DNNL_ARG_DST_ITER, mem_at(m.state, at(reserve, slots[l].hy))},
        {DNNL_ARG_WORKSPACE, mem_at(pd.workspace_desc(), at(reserve, slots[l].workspace))},
        {DNNL_ARG_DIFF_SRC_LAYER, mem_at(m.src_layer, dx.data_ptr())},
        {DNNL_ARG_DIFF_SRC_ITER, mem_at(m.state, dh.data_ptr())},
        {DNNL_ARG_DIFF_WEIGHTS_LAYER, mem_at(dwl_md, dwl.data_ptr())},
        {DNNL_ARG_DIFF_WEIGHTS_ITER, mem_at(dwi_md, dwi.data_ptr())},
        {DNNL_ARG_DIFF_BIAS, mem_at(m.bias, db.data_ptr())},
        {DNNL_ARG_DIFF_DST_LAYER, mem_at(m.dst_layer, dy.data_ptr())},
        {DNNL_ARG_DIFF_DST_ITER, mem_at(m.state, state_of(grad_hy))},
        {DNNL_ARG_SCRATCHPAD, mem_at(pd.scratchpad_desc(), scratchpad.data_ptr())}};
    if (lstm) {
      run[DNNL_ARG_SRC_ITER_C] = mem_at(m.state, cx.data<float>() + l * state);
      run[DNNL_ARG_DST_ITER_C] = mem_at(m.state, at(reserve, slots[l].cy));
      run[DNNL_ARG_DIFF_SRC_ITER_C] = mem_at(m.state, dc.data_ptr());
      run[DNNL_ARG_DIFF_DST_ITER_C] = mem_at(m.state, state_of(grad_cy));
    }
    onednn::execute(prim->primitive, run, "rnn_backward");
    if (!grad_weights.empty()) {
      // Back from the primitive's layouts to ldigo, then to PyTorch's.
      memory plain_l = mem_at(w.layer_md, w.layer.data_ptr());
      memory plain_i = mem_at(w.iter_md, w.iter.data_ptr());
      memory got_l = mem_at(dwl_md, dwl.data_ptr()), got_i = mem_at(dwi_md, dwi.data_ptr());
      dnnl::reorder(got_l, plain_l).execute(onednn::stream(), got_l, plain_l);
      dnnl::reorder(got_i, plain_i).execute(onednn::stream(), got_i, plain_i);
      onednn::stream().wait();
      const std::vector<BlockTensors> g = layer_blocks(p, grad_weights, l);
      std::vector<float*> g_ih, g_hh;
      for (const BlockTensors& b : g) {
        g_ih.push_back(b.w_ih.data<float>());
        g_hh.push_back(b.w_hh.data<float>());
      }
      unpack_weights(p, w.layer.data<float>(), g_ih, In);
      unpack_weights(p, w.iter.data<float>(), g_hh, p.H);
      if (p.has_biases) unpack_bias(p, db.data<float>(), g);
    }
    dy = dx;
  }
}

}  // namespace rcuda::cpu

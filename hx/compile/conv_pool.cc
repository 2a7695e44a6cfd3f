// One block of hx's CNN, conv (stride 1, VALID) -> 2x2 max-pool (stride 2, floor) -> + bias -> ReLU, as
// XLA:CPU custom calls through XLA's FFI: the forward pass and its gradients. Built and loaded by
// hx/compile/conv_pool.py, which documents the calls, when hx uses them, and how they were checked.
//
// Layouts: images x (R, H, W, C) NHWC; kernel w (K, K, C, O) HWIO; bias b (O); output h (R, Hp, Wp, O)
// with Hp = (H - K + 1) / 2 (floor), Wp likewise; arg (R, Hp, Wp, O) uint8: in its low two bits the
// position of each window's first maximum in row-major order (0 top left, 1 top right, 2 bottom left,
// 3 bottom right), which is where XLA's select-and-scatter and hx's `_max_pool` send the window's
// gradient, and kActive where h > 0 (where the ReLU passes the gradient).
//
// The backward pass splits the images into kGroups fixed groups (not one per thread), and the weight and
// bias gradients are the sums of the groups' partial sums in group order. Past kGroups threads each group
// is split further into tasks that take some of its kernel rows (of the weight gradient) and some of its
// images (of the input gradient), which changes no sum's order; the forward pass, which sums nothing
// across images, splits them into as many tasks. So results do not depend on the number of threads, nor
// on which thread ran which task, bit for bit. The calling thread takes tasks too, so a call finishes
// even when no thread of XLA's pool is free. An exception in a task (an allocation that fails)
// is caught where it is thrown and returned as the call's error: one that left a thread of XLA's pool, or
// a handler, would end the process.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// The backward pass's images in kGroups fixed groups (boundaries R * c / kGroups), each with its own partial
// weight and bias gradients, added in group order: the one summation order, whatever the thread count.
constexpr int64_t kGroups = 8;

// The vector width and register blocking of the instruction set compiled for (`-march`): 16 float lanes
// and 32 registers with AVX-512, 8 lanes and 16 registers with AVX or AVX2 (FMA), 4 lanes elsewhere (SSE2,
// and ARM's NEON with 32 registers). A vector wider than the machine's registers is split by the compiler
// into several, and the register blocks below, sized for the wider registers, then spill to the stack
// on every update: AVX2 ran the 16-lane kernels several times slower than XLA's own.
#if defined(__AVX512F__)
#define HX_LANES 16
constexpr int kRegisters = 32;
#elif defined(__AVX__)
#define HX_LANES 8
constexpr int kRegisters = 16;
#elif defined(__aarch64__)
#define HX_LANES 4
constexpr int kRegisters = 32;
#else
#define HX_LANES 4
constexpr int kRegisters = 16;
#endif
constexpr int64_t kLanes = HX_LANES;  // floats per vector
// The channels the kernels take in whole groups (output channels, and input channels for the scatter
// form): a fixed count, not the vector width, so that which blocks run here does not depend on the CPU.
constexpr int64_t kChannels = 16;
static_assert(kChannels % kLanes == 0, "a channel group is whole vectors");
// Output vectors the forward pass keeps per window position: 4 positions x kForwardBlocks accumulators,
// their weights and a broadcast input within the register file.
constexpr int kForwardBlocks = kRegisters >= 32 ? 4 : 2;
// Accumulator vectors of a register-blocked gradient loop (the rest: a broadcast and a loaded operand).
constexpr int kChunk = kRegisters >= 32 ? 16 : 12;

typedef float vf __attribute__((vector_size(4 * HX_LANES), aligned(4)));
typedef int32_t vi __attribute__((vector_size(4 * HX_LANES)));
typedef uint8_t vb __attribute__((vector_size(HX_LANES), aligned(1)));

inline vf Load(const float* p) { return *reinterpret_cast<const vf*>(p); }
// A vector loaded once and used by several multiply-adds: held in a register. Compilers otherwise fold the
// load into each multiply-add as a memory operand, and the loads, not the multiply-adds, bound the loop.
inline vf Held(vf v) {
#if defined(__AVX512F__)
  asm("" : "+v"(v));
#elif defined(__x86_64__) || defined(__i386__)
  asm("" : "+x"(v));
#elif defined(__aarch64__)
  asm("" : "+w"(v));
#endif
  return v;
}
inline void Store(float* p, vf v) { *reinterpret_cast<vf*>(p) = v; }

// What an exception thrown by `f` becomes: an error for XLA (an exception that leaves a thread of XLA's pool,
// or a handler, ends the process).
template <typename F>
ffi::Error Caught(F&& f) {
  try {
    f();
    return ffi::Error::Success();
  } catch (const std::bad_alloc&) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted, "out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return ffi::Error::Internal(std::string("an exception: ") + e.what());
  } catch (...) {
    return ffi::Error::Internal("an exception of unknown type");
  }
}

// `e` with the name of the call it failed in.
ffi::Error In(const std::string& call, const ffi::Error& e) {
  return ffi::Error(e.errc().value_or(ffi::ErrorCode::kInternal), call + ": " + e.message());
}

// compute()'s error (it returns one or throws), named after `call`: every handler's body runs in one.
template <typename F>
ffi::Error Computed(const std::string& call, F&& compute) {
  ffi::Error failed;
  const ffi::Error thrown = Caught([&] { failed = compute(); });
  if (thrown.failure()) return In(call, thrown);
  return failed.failure() ? In(call, failed) : failed;
}

struct Work {
  std::function<void(int64_t)> body;
  int64_t tasks = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  ffi::Error error;  // the first task's, under `mutex`
  void Run() {
    for (;;) {
      const int64_t c = next.fetch_add(1);
      if (c >= tasks) return;
      if (!failed.load(std::memory_order_acquire)) {  // after a failure the other tasks are skipped
        ffi::Error e = Caught([&] { body(c); });
        if (e.failure()) {
          std::lock_guard<std::mutex> lock(mutex);
          if (!failed.exchange(true)) error = std::move(e);
        }
      }
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

// Runs body(c) for c in [0, tasks) on this thread and XLA's intra-op pool; the first exception a task
// throws, as an error (the tasks after it skipped). A helper scheduled after all tasks were taken finds
// none and returns without touching `body`'s captures (the shared Work outlives it); and this returns only
// once every task taken is done, also when scheduling a helper failed.
ffi::Error ParallelTasks(ffi::ThreadPool& pool, int64_t tasks, std::function<void(int64_t)> body) {
  auto work = std::make_shared<Work>();
  work->body = std::move(body);
  work->tasks = tasks;
  const int64_t helpers = std::min<int64_t>(pool.num_threads(), tasks - 1);
  for (int64_t t = 0; t < helpers; ++t)
    if (Caught([&] { pool.Schedule([work] { work->Run(); }); }).failure()) break;  // the rest run here
  work->Run();
  while (work->done.load(std::memory_order_acquire) < tasks) std::this_thread::yield();
  std::lock_guard<std::mutex> lock(work->mutex);
  return work->error;
}

// Tasks per group of images: `slices` where the caller asks for some (> 0), else enough for every thread
// of XLA's pool to take one (ceil(threads / kGroups): one for up to 8 threads). Where tasks split a
// sum, they split it by kernel rows or by images whose results are independent, each element of every
// result summed in the same order: the results are the same, bit for bit, for any count.
int64_t Slices(ffi::ThreadPool& pool, int64_t slices) {
  if (slices > 0) return slices;
  return std::max<int64_t>(1, (pool.num_threads() + kGroups - 1) / kGroups);
}

// Rank-4 buffers (a type name without a comma: XLA's handler macros take it as one argument).
using F32 = ffi::Buffer<ffi::F32, 4>;
using U8 = ffi::Buffer<ffi::U8, 4>;
using F32Out = ffi::ResultBuffer<ffi::F32, 4>;
using U8Out = ffi::ResultBuffer<ffi::U8, 4>;
using F32Vector = ffi::Buffer<ffi::F32, 1>;
using F32VectorOut = ffi::ResultBuffer<ffi::F32, 1>;

// arg's byte: the window position (0-3) in its low bits, kActive where the block's output is positive
// (where the ReLU passes its gradient).
constexpr uint8_t kActive = 0x80;
constexpr uint8_t kPosition = 0x03;

struct Dims {
  int64_t R, H, W, C, K, O, Hp, Wp;
};

// Kernel rows [lo, hi): the part of a weight gradient one task computes.
struct Rows {
  int64_t lo, hi;
};

// The 2x2 window offsets of an NHWC image row-major: top left, top right, bottom left, bottom right.
inline void Offsets(const Dims& d, int64_t off[4]) {
  off[0] = 0;
  off[1] = d.C;
  off[2] = d.W * d.C;
  off[3] = (d.W + 1) * d.C;
}

// The forward pass's weights repacked per block of B = NB * kLanes output channels: (O / B, K * K * C, B),
// each block's weights contiguous, in the order the loops below read them (window after window, from the
// L1 or L2 cache; read with a stride of O floats instead, they ran at half the rate on AVX2).
std::vector<float> PackWeights(const Dims& d, const float* __restrict w, int64_t B) {
  const int64_t KKC = d.K * d.K * d.C;
  std::vector<float> packed(KKC * d.O);
  for (int64_t blk = 0; blk < d.O / B; ++blk)
    for (int64_t t = 0; t < KKC; ++t)
      std::memcpy(packed.data() + (blk * KKC + t) * B, w + t * d.O + blk * B, sizeof(float) * B);
  return packed;
}

// Adds to acc[q] the convolution at window position q (offsets off[q] from base, the window's top left in
// the image), over the kernel rows and then their K * C values (kx, c) in order; wb the block's packed
// weights.
template <int NB>
inline void WindowSums(const Dims& d, const float* __restrict base, const float* __restrict wb,
                       const int64_t off[4], vf acc[4][NB]) {
  constexpr int64_t B = NB * kLanes;
  const int64_t KC = d.K * d.C, row = d.W * d.C;
  for (int64_t ky = 0; ky < d.K; ++ky) {
    const float* xp = base + ky * row;
    const float* wp = wb + ky * KC * B;
    for (int64_t t = 0; t < KC; ++t) {  // (kx, c) of one kernel row, contiguous in x and in wb
      vf wv[NB];
      for (int nb = 0; nb < NB; ++nb) wv[nb] = Held(Load(wp + t * B + kLanes * nb));
      for (int q = 0; q < 4; ++q) {
        const float xv = xp[t + off[q]];
        for (int nb = 0; nb < NB; ++nb) acc[q][nb] += xv * wv[nb];
      }
    }
  }
}

// A window's output from its four positions' sums: h = relu(max + bias) into y and the position of the
// first maximum, with kActive where the ReLU passes, into arg (NB vectors of channels each).
template <int NB>
inline void Window(const vf acc[4][NB], const float* __restrict bias, float* __restrict y,
                   uint8_t* __restrict arg) {
  for (int nb = 0; nb < NB; ++nb) {
    vf best = acc[0][nb];
    vi at = vi{};
    for (int q = 1; q < 4; ++q) {
      const vf v = acc[q][nb];
      // A later position wins only if strictly larger (the first maximum), or if it is NaN, which
      // then sticks (no later value compares larger): the max of a window holding a NaN is NaN.
      const vi take = (v > best) | (v != v);
      best = take ? v : best;
      at = take ? vi{} + q : at;
    }
    // relu(max + b) as jax.nn.relu computes it: a NaN stays NaN; the gradient passes where it is > 0.
    const vf h = best + Load(bias + kLanes * nb);
    const vi keep = (h > 0) | (h != h);
    Store(y + kLanes * nb, keep ? h : vf{});
    at |= (h > 0) & kActive;
    *reinterpret_cast<vb*>(arg + kLanes * nb) = __builtin_convertvector(at, vb);
  }
}

// One image: NB vectors of output channels at a time, the window's four convolution outputs in registers;
// wp packed (PackWeights, B = NB * kLanes): each block's weights are read in order, window after window.
template <int NB>
void ForwardImage(const Dims& d, const float* __restrict xn, const float* __restrict wp,
                  const float* __restrict bias, float* __restrict yn, uint8_t* __restrict an) {
  constexpr int64_t B = NB * kLanes;
  const int64_t O = d.O, K = d.K, C = d.C, W = d.W, KKC = K * K * C;
  int64_t off[4];
  Offsets(d, off);
  for (int64_t i = 0; i < d.Hp; ++i)
    for (int64_t j = 0; j < d.Wp; ++j)
      for (int64_t ob = 0; ob < O; ob += B) {
        vf acc[4][NB] = {};
        WindowSums<NB>(d, xn + (2 * i * W + 2 * j) * C, wp + (ob / B) * KKC * B, off, acc);
        Window<NB>(acc, bias + ob, yn + (i * d.Wp + j) * O + ob, an + (i * d.Wp + j) * O + ob);
      }
}

// Gradients for small C: per window, the output gradient the ReLU passes split by window position into
// four masked vectors over the channels, each multiplied into that position's input patch. dw (K, K, C, O):
// its kernel rows [rows.lo, rows.hi) only; dxn, if any, only with all K rows.
template <int NB>
void BackwardImageMasked(const Dims& d, Rows rows, const float* __restrict xn, const float* __restrict w,
                         const uint8_t* __restrict an, const float* __restrict gn, float* __restrict dw,
                         float* __restrict dxn) {
  const int64_t O = d.O, K = d.K, C = d.C, W = d.W;
  int64_t off[4];
  Offsets(d, off);
  for (int64_t i = 0; i < d.Hp; ++i)
    for (int64_t j = 0; j < d.Wp; ++j)
      for (int64_t ob = 0; ob < O; ob += kLanes * NB) {
        vf m[4][NB];
        for (int nb = 0; nb < NB; ++nb) {
          const int64_t at = (i * d.Wp + j) * O + ob + kLanes * nb;
          const vf g = Load(gn + at);
          const vi a = __builtin_convertvector(*reinterpret_cast<const vb*>(an + at), vi);
          for (int q = 0; q < 4; ++q) m[q][nb] = (a == (q | kActive)) ? g : vf{};
        }
        const int64_t first = (2 * i * W + 2 * j) * C;
        for (int64_t ky = rows.lo; ky < rows.hi; ++ky)
          for (int64_t t = 0; t < K * C; ++t) {
            const int64_t at = first + ky * W * C + t;
            float* dp = dw + (ky * K * C + t) * O + ob;
            vf acc[NB];
            for (int nb = 0; nb < NB; ++nb) acc[nb] = Load(dp + kLanes * nb);
            for (int q = 0; q < 4; ++q) {
              const float xv = xn[at + off[q]];
              for (int nb = 0; nb < NB; ++nb) acc[nb] += xv * m[q][nb];
            }
            for (int nb = 0; nb < NB; ++nb) Store(dp + kLanes * nb, acc[nb]);
            if (dxn) {
              const float* wp = w + (ky * K * C + t) * O + ob;
              for (int q = 0; q < 4; ++q) {
                vf s{};
                for (int nb = 0; nb < NB; ++nb) s += m[q][nb] * Load(wp + kLanes * nb);
                float total = 0.0f;
                for (int l = 0; l < kLanes; ++l) total += s[l];
                dxn[at + off[q]] += total;
              }
            }
          }
      }
}

// The scatter form (C a multiple of kChannels): each output gradient the ReLU passes goes to the one window
// position its max came from, over the K rows of K * C contiguous values of the images (for the weight
// gradient) or of the input gradient. A row's K * C values are summed in chunks of at most kChunk vectors,
// whose accumulators stay in registers; chunks split a row by its elements, so each element's sum keeps
// its order whatever the chunk sizes. The loops over chunks: `Chunked` below.

// Calls body.template operator()<L>(offset) for consecutive chunks [offset, offset + L * kLanes) of a row
// of n floats (n a multiple of kLanes), the chunks as nearly equal as whole vectors allow, each of at most
// kChunk vectors.
template <typename Body>
void Chunked(int64_t n, Body&& body) {
  const int64_t vectors = n / kLanes, chunks = (vectors + kChunk - 1) / kChunk;
  for (int64_t c = 0, v0 = 0; c < chunks; ++c) {
    const int64_t v1 = vectors * (c + 1) / chunks;
    const int64_t offset = v0 * kLanes;
    switch (v1 - v0) {
#define HX_CHUNK(L)                                      \
  case L:                                              \
    if constexpr (L <= kChunk) body.template operator()<L>(offset); \
    break;
      HX_CHUNK(1) HX_CHUNK(2) HX_CHUNK(3) HX_CHUNK(4) HX_CHUNK(5) HX_CHUNK(6) HX_CHUNK(7) HX_CHUNK(8)
      HX_CHUNK(9) HX_CHUNK(10) HX_CHUNK(11) HX_CHUNK(12) HX_CHUNK(13) HX_CHUNK(14) HX_CHUNK(15) HX_CHUNK(16)
#undef HX_CHUNK
      default:
        throw std::logic_error("a chunk of " + std::to_string(v1 - v0) + " vectors");
    }
    v0 = v1;
  }
}
static_assert(kChunk <= 16, "Chunked instantiates chunks of up to 16 vectors");

// The scatter form's weight gradient of images [lo, hi) into dwt (O, K, K, C), its kernel rows
// [rows.lo, rows.hi) only: for each output channel o, kernel row ky and chunk of the row, the sum over a
// few images at a time (kTile, whose inputs stay in the L1 cache) in registers.
constexpr int64_t kTile = 2;

void WeightGradient(const Dims& d, Rows rows, const float* __restrict xs, const uint8_t* __restrict as,
                    const float* __restrict gs, int64_t lo, int64_t hi, float* __restrict dwt) {
  const int64_t O = d.O, K = d.K, C = d.C, W = d.W, image = d.H * d.W * d.C, pooled = d.Hp * d.Wp * d.O;
  for (int64_t n0 = lo; n0 < hi; n0 += kTile) {
    const int64_t n1 = std::min(hi, n0 + kTile);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t ky = rows.lo; ky < rows.hi; ++ky)
        Chunked(K * C, [&]<int L>(int64_t offset) {
          float* dp = dwt + (o * K + ky) * K * C + offset;
          vf acc[L];
          for (int v = 0; v < L; ++v) acc[v] = Load(dp + kLanes * v);
          for (int64_t n = n0; n < n1; ++n) {
            const float* xn = xs + n * image + ky * W * C + offset;
            const float* gn = gs + n * pooled + o;
            const uint8_t* an = as + n * pooled + o;
            for (int64_t i = 0; i < d.Hp; ++i)
              for (int64_t j = 0; j < d.Wp; ++j) {
                const float gv = gn[(i * d.Wp + j) * O];
                const uint8_t byte = an[(i * d.Wp + j) * O];
                if (gv == 0.0f || !(byte & kActive)) continue;  // the ReLU's zeros: about half of them
                const uint8_t a = byte & kPosition;
                const float* xp = xn + ((2 * i + a / 2) * W + 2 * j + a % 2) * C;
                for (int v = 0; v < L; ++v) acc[v] += gv * Load(xp + kLanes * v);
              }
          }
          for (int v = 0; v < L; ++v) Store(dp + kLanes * v, acc[v]);
        });
  }
}

// The scatter form's input gradient of one image into dxn (H, W, C), wt (O, K, K, C): per window, the
// nonzero output gradients listed by the window position they go to; then per window row a, kernel row
// ky and position b of that row, the K * C values that position reaches, in chunks summed in registers.
// Position b = 0's gradients are summed before b = 1's, which reach the same row one pixel further on.
void InputGradientImage(const Dims& d, const float* __restrict wt, const uint8_t* __restrict an,
                        const float* __restrict gn, float* __restrict dxn) {
  const int64_t O = d.O, K = d.K, C = d.C, W = d.W;
  std::vector<int32_t> channel(4 * O);
  std::vector<float> value(4 * O);
  for (int64_t i = 0; i < d.Hp; ++i)
    for (int64_t j = 0; j < d.Wp; ++j) {
      const float* g = gn + (i * d.Wp + j) * O;
      const uint8_t* arg = an + (i * d.Wp + j) * O;
      int64_t count[4] = {0, 0, 0, 0};
      for (int64_t o = 0; o < O; ++o) {
        if (g[o] == 0.0f || !(arg[o] & kActive)) continue;
        const int q = arg[o] & kPosition;
        channel[q * O + count[q]] = static_cast<int32_t>(o);
        value[q * O + count[q]++] = g[o];
      }
      for (int64_t q = 0; q < 4; ++q) {
        if (count[q] == 0) continue;
        const int64_t a = q / 2, b = q % 2;
        const int32_t* qc = channel.data() + q * O;
        const float* qv = value.data() + q * O;
        for (int64_t ky = 0; ky < K; ++ky)
          Chunked(K * C, [&]<int L>(int64_t offset) {
            float* dp = dxn + ((2 * i + a + ky) * W + 2 * j + b) * C + offset;
            vf acc[L];
            for (int v = 0; v < L; ++v) acc[v] = Load(dp + kLanes * v);
            for (int64_t e = 0; e < count[q]; ++e) {
              const float gv = qv[e];
              const float* wp = wt + (qc[e] * K + ky) * K * C + offset;
              for (int v = 0; v < L; ++v) acc[v] += gv * Load(wp + kLanes * v);
            }
            for (int v = 0; v < L; ++v) Store(dp + kLanes * v, acc[v]);
          });
      }
    }
}

// The bias gradient of images [lo, hi): the output gradient summed where the ReLU passed it. db (O).
void BiasGradient(const Dims& d, const uint8_t* __restrict as, const float* __restrict gs, int64_t lo,
                  int64_t hi, float* __restrict db) {
  const int64_t O = d.O;
  for (int64_t p = lo * d.Hp * d.Wp; p < hi * d.Hp * d.Wp; ++p)
    for (int64_t ob = 0; ob < O; ob += kLanes) {
      const vf g = Load(gs + p * O + ob);
      const vi a = __builtin_convertvector(*reinterpret_cast<const vb*>(as + p * O + ob), vi);
      Store(db + ob, Load(db + ob) + ((a & kActive) ? g : vf{}));
    }
}

using Dimensions = ffi::Span<const int64_t>;

std::string Text(Dimensions dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

std::vector<int64_t> Vector(Dimensions dims) { return std::vector<int64_t>(dims.begin(), dims.end()); }

// The block's dimensions from images x (R, H, W, C) and kernel w (K, K, C, O), or an error naming what
// does not fit: XLA hands the handlers whatever shapes a call was given, and every loop below trusts `d`.
ffi::Error GetDims(Dimensions x, Dimensions w, Dims& d) {
  d = Dims{x[0], x[1], x[2], x[3], w[0], w[3], 0, 0};
  if (w[0] < 1 || w[0] != w[1])
    return ffi::Error::InvalidArgument("the kernel " + Text(w) + " is not square (K, K, C, O), K >= 1");
  if (w[2] != d.C)
    return ffi::Error::InvalidArgument("the images " + Text(x) + " have " + std::to_string(d.C) +
                                       " channels, the kernel " + Text(w) + " takes " + std::to_string(w[2]));
  if (d.O % kChannels != 0)
    return ffi::Error::InvalidArgument("the kernel " + Text(w) + " has " + std::to_string(d.O) +
                                       " output channels, not a multiple of " + std::to_string(kChannels));
  d.Hp = (d.H - d.K + 1) / 2;
  d.Wp = (d.W - d.K + 1) / 2;
  if (d.H - d.K + 1 < 2 || d.W - d.K + 1 < 2)
    return ffi::Error::InvalidArgument("the images " + Text(x) + " are smaller than the kernel " + Text(w) +
                                       " and a 2x2 window");
  return ffi::Error::Success();
}

// The first of `checks` that fails: each a shape's name, the shape, the one it should be, and why.
struct Check {
  const char* what;
  Dimensions got;
  std::vector<int64_t> want;
  const char* why;
};

ffi::Error Expect(std::initializer_list<Check> checks) {
  for (const Check& c : checks)
    if (!(c.got == Dimensions(c.want)))
      return ffi::Error::InvalidArgument("the shape of " + std::string(c.what) + " is " + Text(c.got) +
                                         ", not " + Text(c.want) + " (" + c.why + ")");
  return ffi::Error::Success();
}

// The pooled shape (R, Hp, Wp, O) of the block.
std::vector<int64_t> Pooled(const Dims& d) { return {d.R, d.Hp, d.Wp, d.O}; }
constexpr char kPooledWhy[] = "the images through the kernel and 2x2 windows";

ffi::Error ForwardChecked(ffi::ThreadPool& pool, const F32& x, const F32& w, const F32Vector& b,
                          int64_t slices, F32Out& y, U8Out& arg) {
  Dims d;
  if (ffi::Error e = GetDims(x.dimensions(), w.dimensions(), d); e.failure()) return e;
  if (ffi::Error e = Expect({{"the bias", b.dimensions(), {d.O}, "the kernel's output channels"},
                             {"the output", y->dimensions(), Pooled(d), kPooledWhy},
                             {"the window positions' output", arg->dimensions(), Pooled(d), kPooledWhy}});
      e.failure())
    return e;
  const float* bs = b.typed_data();
  const float* xs = x.typed_data();
  const float* ws = w.typed_data();
  float* ys = y->typed_data();
  uint8_t* as = arg->typed_data();
  // Each image's output on its own: any split of the images gives the same results.
  const int64_t tasks = kGroups * Slices(pool, slices);
  const int NB = d.O % (kForwardBlocks * kLanes) == 0 ? kForwardBlocks : d.O % (2 * kLanes) == 0 ? 2 : 1;
  const std::vector<float> packed = PackWeights(d, ws, NB * kLanes);
  const float* wp = packed.data();
  return ParallelTasks(pool, tasks, [&](int64_t c) {
    for (int64_t n = d.R * c / tasks; n < d.R * (c + 1) / tasks; ++n) {
      const float* xn = xs + n * d.H * d.W * d.C;
      float* yn = ys + n * d.Hp * d.Wp * d.O;
      uint8_t* an = as + n * d.Hp * d.Wp * d.O;
      if (NB == kForwardBlocks) ForwardImage<kForwardBlocks>(d, xn, wp, bs, yn, an);
      else if (NB == 2) ForwardImage<2>(d, xn, wp, bs, yn, an);
      else ForwardImage<1>(d, xn, wp, bs, yn, an);
    }
  });
}

ffi::Error Forward(ffi::ThreadPool pool, F32 x, F32 w, F32Vector b, int64_t slices, F32Out y, U8Out arg) {
  return Computed("hx_conv_pool_forward", [&] { return ForwardChecked(pool, x, w, b, slices, y, arg); });
}

ffi::Error BackwardChecked(ffi::ThreadPool& pool, const Dims& d, const F32& x, const F32& w, const U8& arg,
                           const F32& g, float* dw, float* db, float* dx, int64_t slices);

// Backward's checks of every shape, then BackwardChecked; dx_out null for the call without the input
// gradient.
ffi::Error Backward(ffi::ThreadPool& pool, const F32& x, const F32& w, const U8& arg, const F32& g,
                    F32Out& dw_out, F32VectorOut& db_out, F32Out* dx_out, int64_t slices) {
  Dims d;
  if (ffi::Error e = GetDims(x.dimensions(), w.dimensions(), d); e.failure()) return e;
  const std::vector<int64_t> kernel = Vector(w.dimensions());
  if (ffi::Error e = Expect({{"the window positions", arg.dimensions(), Pooled(d), kPooledWhy},
                             {"the output gradient", g.dimensions(), Pooled(d), kPooledWhy},
                             {"the weight gradient", dw_out->dimensions(), kernel, "the kernel's"},
                             {"the bias gradient", db_out->dimensions(), {d.O}, "the kernel's output channels"}});
      e.failure())
    return e;
  if (dx_out)
    if (ffi::Error e = Expect({{"the input gradient", (*dx_out)->dimensions(), Vector(x.dimensions()),
                                "the images'"}});
        e.failure())
      return e;
  return BackwardChecked(pool, d, x, w, arg, g, dw_out->typed_data(), db_out->typed_data(),
                         dx_out ? (*dx_out)->typed_data() : nullptr, slices);
}

// Backward on operands whose shapes were checked; throws what its allocations throw.
ffi::Error BackwardChecked(ffi::ThreadPool& pool, const Dims& d, const F32& x, const F32& w, const U8& arg,
                           const F32& g, float* dw, float* db, float* dx, int64_t slices) {
  const float* xs = x.typed_data();
  const float* ws = w.typed_data();
  const uint8_t* as = arg.typed_data();
  const float* gs = g.typed_data();
  const bool scatter = d.C % kChannels == 0;
  const int64_t K = d.K, KC = d.K * d.C, KKC = d.K * d.K * d.C, image = d.H * d.W * d.C;
  std::vector<float> wt;
  if (scatter && dx) {
    wt.resize(KKC * d.O);
    for (int64_t t = 0; t < KKC; ++t)
      for (int64_t o = 0; o < d.O; ++o) wt[o * KKC + t] = ws[t * d.O + o];
  }
  // S tasks per group of images: each the group's weight gradient over some kernel rows and its input
  // gradient over some images (the bias gradient in the first). The masked form computes both per image
  // in one loop, so with an input gradient it takes a group per task.
  const int64_t S = (!scatter && dx) ? 1 : std::min(K, Slices(pool, slices));
  // Each group's partial sums, zeroed by its tasks row by row; allocated by the group's one task where
  // there is one (in parallel, each in the memory of the thread that fills it), here where it has several.
  std::vector<std::unique_ptr<float[]>> partial(kGroups), partial_db(kGroups);
  auto allocate = [&](int64_t c) {
    partial[c].reset(new float[KKC * d.O]);
    partial_db[c].reset(new float[d.O]);
  };
  if (S > 1)
    for (int64_t c = 0; c < kGroups; ++c) allocate(c);
  ffi::Error failed = ParallelTasks(pool, kGroups * S, [&](int64_t task) {
    const int64_t c = task / S, s = task % S;
    if (S == 1) allocate(c);
    const int64_t lo = d.R * c / kGroups, hi = d.R * (c + 1) / kGroups;
    const Rows rows{K * s / S, K * (s + 1) / S};
    const int64_t dx_lo = lo + (hi - lo) * s / S, dx_hi = lo + (hi - lo) * (s + 1) / S;
    float* pc = partial[c].get();
    if (scatter) {
      for (int64_t o = 0; o < d.O; ++o)
        std::memset(pc + (o * K + rows.lo) * KC, 0, sizeof(float) * (rows.hi - rows.lo) * KC);
    } else {
      std::memset(pc + rows.lo * KC * d.O, 0, sizeof(float) * (rows.hi - rows.lo) * KC * d.O);
    }
    if (s == 0) {
      std::memset(partial_db[c].get(), 0, sizeof(float) * d.O);
      BiasGradient(d, as, gs, lo, hi, partial_db[c].get());
    }
    if (dx) std::memset(dx + dx_lo * image, 0, sizeof(float) * (dx_hi - dx_lo) * image);
    if (!scatter) {
      for (int64_t n = lo; n < hi; ++n) {
        const float* xn = xs + n * image;
        const uint8_t* an = as + n * d.Hp * d.Wp * d.O;
        const float* gn = gs + n * d.Hp * d.Wp * d.O;
        float* dxn = dx && n >= dx_lo && n < dx_hi ? dx + n * image : nullptr;
        if (d.O % (2 * kLanes) == 0) BackwardImageMasked<2>(d, rows, xn, ws, an, gn, pc, dxn);
        else BackwardImageMasked<1>(d, rows, xn, ws, an, gn, pc, dxn);
      }
      return;
    }
    WeightGradient(d, rows, xs, as, gs, lo, hi, pc);
    if (dx)
      for (int64_t n = dx_lo; n < dx_hi; ++n)
        InputGradientImage(d, wt.data(), as + n * d.Hp * d.Wp * d.O, gs + n * d.Hp * d.Wp * d.O, dx + n * image);
  });
  if (failed.failure()) return failed;
  // The groups' partial sums added in group order; split (when S > 1) over the kernel's elements, each
  // element's sum the same.
  const int64_t adders = S == 1 ? 1 : kGroups * S;
  return ParallelTasks(pool, adders, [&](int64_t task) {
    const int64_t t_lo = KKC * task / adders, t_hi = KKC * (task + 1) / adders;
    std::memset(dw + t_lo * d.O, 0, sizeof(float) * (t_hi - t_lo) * d.O);
    if (task == 0) std::memset(db, 0, sizeof(float) * d.O);
    for (int64_t c = 0; c < kGroups; ++c) {
      const float* p = partial[c].get();
      if (scatter) {
        for (int64_t o = 0; o < d.O; ++o)
          for (int64_t t = t_lo; t < t_hi; ++t) dw[t * d.O + o] += p[o * KKC + t];
      } else {
        for (int64_t t = t_lo * d.O; t < t_hi * d.O; ++t) dw[t] += p[t];
      }
      if (task == 0)
        for (int64_t o = 0; o < d.O; ++o) db[o] += partial_db[c][o];
    }
  });
}

ffi::Error BackwardWithInput(ffi::ThreadPool pool, F32 x, F32 w, U8 arg, F32 g, int64_t slices, F32Out dw,
                             F32VectorOut db, F32Out dx) {
  return Computed("hx_conv_pool_backward_with_input",
                  [&] { return Backward(pool, x, w, arg, g, dw, db, &dx, slices); });
}

ffi::Error BackwardWeights(ffi::ThreadPool pool, F32 x, F32 w, U8 arg, F32 g, int64_t slices, F32Out dw,
                           F32VectorOut db) {
  return Computed("hx_conv_pool_backward_weights",
                  [&] { return Backward(pool, x, w, arg, g, dw, db, nullptr, slices); });
}

// Backward's arguments and its first two results (x, w, arg, dh -> dw, db), shared by its two calls.
auto BackwardBinding() {
  return ffi::Ffi::Bind()
      .Ctx<ffi::ThreadPool>()
      .Arg<F32>()
      .Arg<F32>()
      .Arg<U8>()
      .Arg<F32>()
      .Attr<int64_t>("slices")
      .Ret<F32>()
      .Ret<F32Vector>();
}

}  // namespace

// Every call's attribute `slices`: 0 for tasks as many as XLA's pool has threads, else that many tasks per
// group of images (Slices); the results are the same for any value.
//
// Forward: x, w, b -> h = relu(max_pool(conv(x, w)) + b), arg.
XLA_FFI_DEFINE_HANDLER_SYMBOL(HxConvPoolForward, Forward,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<F32>()
                                  .Arg<F32>()
                                  .Arg<F32Vector>()
                                  .Attr<int64_t>("slices")
                                  .Ret<F32>()
                                  .Ret<U8>());
// Backward: x, w, arg, dh -> dw, db, dx.
XLA_FFI_DEFINE_HANDLER_SYMBOL(HxConvPoolBackwardWithInput, BackwardWithInput, BackwardBinding().Ret<F32>());
// Backward without the input gradient: x, w, arg, dh -> dw, db.
XLA_FFI_DEFINE_HANDLER_SYMBOL(HxConvPoolBackwardWeights, BackwardWeights, BackwardBinding());

// The vector width this library was compiled with, in floats (16 AVX-512, 8 AVX or AVX2, 4 otherwise):
// what the instruction set it was built for (-march) gave, for hx to report and its tests to check.
extern "C" int HxConvPoolLanes() { return static_cast<int>(kLanes); }

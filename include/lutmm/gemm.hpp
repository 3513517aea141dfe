#pragma once
// The GPU GEMM: out[m,n] = x[m,k] . W[n,k]^T (+ bias[n]), W in the lutmm format, packed.
#include <cstdint>
#include <memory>
#include <optional>

#include <cuda_runtime_api.h>

#include "lutmm/config.hpp"
#include "lutmm/format.hpp"
#include "lutmm/pack.hpp"
#include "lutmm/tune.hpp"

namespace lutmm {

// A non-owning view of a packed weight in device memory.
struct WeightView {
  int64_t n = 0, k = 0;
  int bits = 4;
  int group_size = 128;
  DType dtype = DType::bf16;
  const uint32_t* packed = nullptr;  // PackedShape::words() words
  const uint16_t* table = nullptr;   // 2^bits dtype values
  const uint16_t* scales = nullptr;  // PackedShape::scale_count() dtype values, [scale_rows][n_padded]
};

// A packed weight that owns its device memory.
class DeviceWeight {
 public:
  // Packs on the CPU and uploads (synchronous).
  static DeviceWeight upload(const QuantizedWeight& q, cudaStream_t stream = nullptr);
  // Packs device-resident codes ([n][k], one per byte) on the GPU; table and scales are host arrays.
  static DeviceWeight pack_on_device(const uint8_t* device_codes, int64_t n, int64_t k, int bits, int group_size,
                                     DType dtype, const uint16_t* host_table, const uint16_t* host_scales,
                                     cudaStream_t stream = nullptr);
  const WeightView& view() const { return view_; }
  std::vector<uint8_t> download_codes() const;  // unpack back to [n][k] codes (for checks)

 private:
  WeightView view_;
  std::shared_ptr<void> memory_;
};

struct GemmOptions {
  std::optional<KernelConfig> config;  // force a config; otherwise the runtime chooses
  cudaStream_t stream = nullptr;
  // sm_90+: a GEMM starts while the stream's previous kernel finishes (programmatic dependent launch) and
  // reads its weights (the first W tiles, their scales and the table) before waiting for that kernel; x and
  // the output only after. Set this when a kernel launched on `stream` since its last synchronisation writes
  // w's codes, scales or table (an in-place weight update, a user's own pack kernel): the GEMM then starts
  // after it ends.
  bool weights_just_written = false;
};

// x: [m][k] dtype, out: [m][n] dtype, bias: [n] dtype or null. Pointers 16-byte aligned (bias 2-byte).
// Throws Error before launching anything when an argument is bad.
void gemm(const void* x, int64_t m, const WeightView& w, const void* bias, void* out, const GemmOptions& options = {});

// The config the runtime would use for this problem on the current device (choose_config: the tuning
// database, first-use tuning or the heuristic, per tune_mode()), and where it came from. In first-use
// mode a key not yet tuned is tuned by this call, as gemm() would.
KernelConfig chosen_config(const Problem& p);
struct ConfigChoice {
  KernelConfig config;
  ConfigSource source = ConfigSource::heuristic;
};
ConfigChoice chosen_config_with_source(const Problem& p);
// Compiles (or loads from the cache) the kernel for (p, cfg) without running it, and its variants where a run may
// launch them (the split-K sum spread over the splits; the first slices dequantized before the dependency wait, on
// sm_90+ where every split is 8+ k tiles long); returns the longest compile in ms, 0 when cached. For arch_override
// (0: the current GPU's), the variants any GPU of that architecture may take.
double precompile(const Problem& p, const KernelConfig& cfg, int arch_override = 0);
// The same for the GPU dev describes (current_device_info(), device_info(i)): only the variants it may take (an
// H100 never takes the pre-wait slices).
double precompile(const Problem& p, const KernelConfig& cfg, const DeviceInfo& dev);

}  // namespace lutmm

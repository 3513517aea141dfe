// NVRTC: versions and targets, the option list, one compile, the ptxas report and the cache key.
#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "jit/embedded_headers.hpp"
#include "jit/internal.hpp"
#include "lutmm/error.hpp"

namespace lutmm::jit {

namespace {

std::string in_quotes(std::string_view text) { return std::string("'").append(text).append("'"); }

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string join_archs(const std::vector<int>& archs) {
  std::string out;
  for (int a : archs) out.append(out.empty() ? "" : " ").append(std::to_string(a));
  return out;
}

void check_nvrtc(nvrtcResult result, const char* call) {
  if (result != NVRTC_SUCCESS)
    throw_error(std::string("NVRTC ").append(call).append(" failed: ").append(nvrtcGetErrorString(result)));
}

// Owns one nvrtcProgram so every exit path destroys it.
struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// Reads the integer that ends right before `unit` in `line` ("  256 bytes stack frame" -> 256); -1 if absent.
int number_before(std::string_view line, std::string_view unit) {
  const size_t at = line.find(unit);
  if (at == std::string_view::npos) return -1;
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  int value = -1;
  const auto [ptr, error] = std::from_chars(line.data() + begin, line.data() + end, value);
  return error == std::errc() && ptr == line.data() + end ? value : -1;
}

std::string text_after(std::string_view line, std::string_view marker) {
  std::string rest(line.substr(line.find(marker) + marker.size()));
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.pop_back();
  return rest;
}

// ptxas -v reports, per function (entry or not):
//   ptxas info    : Compiling entry function 'kern' for 'sm_80'        <- entries only
//   ptxas info    : Function properties for kern
//   ptxas         .     256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 30 registers, used 0 barriers, 256 bytes cumulative stack size, 360 bytes cmem[0]
// (with ", 1024 bytes smem" after the barriers when the kernel has static shared memory)
// and, for sm_90a code whose wgmma pipeline it could not keep (before the function's own lines),
//   ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due to
//                   ... in the function 'kern'
// Returns the entries' resources by name; non-entry functions (noinline device functions) are dropped.
std::map<std::string, KernelResources> parse_entries(const std::string& log) {
  std::map<std::string, KernelResources> all;
  std::set<std::string> entries;
  std::string compiling, properties_of;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    const std::string_view line(log.data() + pos, end - pos);
    pos = end + 1;
    static constexpr std::string_view kEntry = "Compiling entry function '";
    static constexpr std::string_view kProperties = "Function properties for ";
    static constexpr std::string_view kSerialized = "wgmma.mma_async instructions are serialized";
    static constexpr std::string_view kInFunction = "in the function '";
    if (line.find(kSerialized) != std::string_view::npos) {
      if (const size_t at = line.rfind(kInFunction); at != std::string_view::npos) {
        const size_t begin = at + kInFunction.size();
        const size_t close = line.find('\'', begin);
        if (close != std::string_view::npos) all[std::string(line.substr(begin, close - begin))].wgmma_serialized = true;
      }
    } else if (const size_t at = line.find(kEntry); at != std::string_view::npos) {
      const size_t begin = at + kEntry.size();
      const size_t close = line.find('\'', begin);
      if (close == std::string_view::npos) continue;
      compiling = std::string(line.substr(begin, close - begin));
      entries.insert(compiling);
    } else if (line.find(kProperties) != std::string_view::npos) {
      properties_of = text_after(line, kProperties);
    } else if (line.find("bytes stack frame") != std::string_view::npos && !properties_of.empty()) {
      KernelResources& r = all[properties_of];
      r.stack_frame_bytes = number_before(line, "bytes stack frame");
      r.spill_store_bytes = number_before(line, "bytes spill stores");
      r.spill_load_bytes = number_before(line, "bytes spill loads");
      properties_of.clear();
    } else if (line.find(" registers") != std::string_view::npos && line.find("Used ") != std::string_view::npos &&
               !compiling.empty()) {
      all[compiling].registers = number_before(line, " registers");
      all[compiling].static_shared_bytes =
          line.find(" bytes smem") != std::string_view::npos ? number_before(line, " bytes smem") : 0;
    }
  }
  std::erase_if(all, [&](const auto& item) { return !entries.contains(item.first); });
  return all;
}

bool nvrtc_has_own_cache() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return major > 12 || (major == 12 && minor >= 9);
}

}  // namespace

KernelResources parse_ptxas_report(const std::string& log) {
  KernelResources out;
  for (const auto& [name, r] : parse_entries(log)) {
    out.registers = std::max(out.registers, r.registers);
    out.spill_store_bytes = std::max(out.spill_store_bytes, r.spill_store_bytes);
    out.spill_load_bytes = std::max(out.spill_load_bytes, r.spill_load_bytes);
    out.stack_frame_bytes = std::max(out.stack_frame_bytes, r.stack_frame_bytes);
    out.static_shared_bytes = std::max(out.static_shared_bytes, r.static_shared_bytes);
    out.wgmma_serialized = out.wgmma_serialized || r.wgmma_serialized;
  }
  return out;
}

KernelResources parse_ptxas_report(const std::string& log, const std::string& kernel_name) {
  const auto all = parse_entries(log);
  const auto it = all.find(kernel_name);
  return it == all.end() ? KernelResources{} : it->second;
}

std::string nvrtc_version() {
  static const std::string version = [] {
    int major = 0, minor = 0;
    check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return version;
}

std::vector<int> nvrtc_supported_archs() {
  static const std::vector<int> archs = [] {
    int count = 0;
    check_nvrtc(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
    std::vector<int> out(static_cast<size_t>(count));
    if (count > 0) check_nvrtc(nvrtcGetSupportedArchs(out.data()), "nvrtcGetSupportedArchs");
    std::sort(out.begin(), out.end());
    if (out.empty()) throw_error("NVRTC " + nvrtc_version() + " reports no supported GPU architecture");
    return out;
  }();
  return archs;
}

std::string nvrtc_target(int arch, bool arch_specific) {
  const std::vector<int> archs = nvrtc_supported_archs();
  const std::string nvrtc = "NVRTC " + nvrtc_version();
  if (arch < archs.front() || arch > 999)
    throw_argument_error("arch",
                         "a compute capability as major*10+minor that " + nvrtc + " can target (" + join_archs(archs) +
                             ", or newer through PTX)",
                         std::to_string(arch));
  if (arch_specific && arch < 90)
    throw_argument_error("arch_specific", "false below arch 90 (sm_90a is the first arch-specific target)",
                         "true with arch " + std::to_string(arch));
  if (std::binary_search(archs.begin(), archs.end(), arch))
    return "sm_" + std::to_string(arch) + (arch_specific ? "a" : "");
  if (arch_specific)
    throw_argument_error("arch",
                         "an arch " + nvrtc + " supports when arch_specific is set (" + join_archs(archs) +
                             "): sm_XYa code runs on X.Y alone, so there is no fallback",
                         std::to_string(arch));
  const int newest_below = *std::prev(std::upper_bound(archs.begin(), archs.end(), arch));
  if (newest_below / 10 == arch / 10) return "sm_" + std::to_string(newest_below);
  return "compute_" + std::to_string(newest_below);
}

namespace detail {

void validate_request(const CompileRequest& r) {
  if (r.source.empty()) throw_argument_error("source", "the text of a .cu translation unit", "an empty string");
  if (r.source.find('\0') != std::string::npos)
    throw_argument_error("source", "text without NUL characters",
                         "a NUL at offset " + std::to_string(r.source.find('\0')));
  if (!is_identifier(r.kernel_name))
    throw_argument_error("kernel_name", "the C identifier of an extern \"C\" __global__ function",
                         in_quotes(r.kernel_name));
  for (const std::string& option : r.extra_options) {
    if (option.empty() || option.find('\0') != std::string::npos)
      throw_argument_error("extra_options", "non-empty NVRTC options without NUL characters", in_quotes(option));
    if (option.starts_with("--gpu-architecture") || option.starts_with("-arch"))
      throw_argument_error("extra_options", "no architecture option (the target comes from arch/arch_specific)",
                           in_quotes(option));
  }
}

std::vector<std::string> nvrtc_options(const CompileRequest& r, const std::string& target) {
  // No -I: device code finds its headers among the embedded ones and needs nothing of the toolkit.
  std::vector<std::string> options = {"--gpu-architecture=" + target, "-std=c++17", "-Xptxas=-v", "-DLUTMM_JIT=1"};
  // NVRTC 12.9+ on a machine with a driver also caches in the driver's compute cache (~/.nv/ComputeCache);
  // a hit there skips ptxas and with it the -v report that resources are read from (seen on an H200 with
  // NVRTC 13.0). lutmm keeps its own cache, so NVRTC's is turned off.
  if (nvrtc_has_own_cache()) options.push_back("--no-cache");
  options.insert(options.end(), r.extra_options.begin(), r.extra_options.end());
  return options;
}

const std::string& nvrtc_identity() {
  static const std::string identity = [] {
    std::string id = "nvrtc " + nvrtc_version();
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname != nullptr) {
      std::error_code ec;
      const auto path = std::filesystem::canonical(info.dli_fname, ec);
      const auto size = ec ? 0 : std::filesystem::file_size(path, ec);
      if (!ec) id.append(" ").append(path.string()).append(" ").append(std::to_string(size));
    }
    return id;
  }();
  return identity;
}

const Digest128& embedded_headers_digest() {
  static const Digest128 digest = [] {
    Hasher128 h;
    const auto& headers = embedded_device_headers();
    h.u64(headers.size());
    for (const EmbeddedHeader& header : headers) h.field(header.name).field(header.text);
    return h.digest();
  }();
  return digest;
}

void warn_once(const std::string& kind, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (warned.insert(kind).second) std::fprintf(stderr, "lutmm: warning: %s\n", message.c_str());
}

}  // namespace detail

std::string cache_key(const CompileRequest& r) {
  detail::validate_request(r);
  const std::string target = nvrtc_target(r.arch, r.arch_specific);
  const std::vector<std::string> options = detail::nvrtc_options(r, target);
  const Digest128& headers = detail::embedded_headers_digest();
  Hasher128 h;
  h.field("lutmm-jit-cache").u64(detail::kCacheFormatVersion).field(detail::nvrtc_identity());
  h.u64(headers.hi).u64(headers.lo);
  h.field(r.source).field(r.kernel_name).u64(static_cast<uint64_t>(r.arch)).u64(r.arch_specific ? 1 : 0);
  h.field(target).u64(options.size());
  for (const std::string& option : options) h.field(option);
  return h.digest().hex();
}

CompiledKernel compile(const CompileRequest& r) {
  detail::validate_request(r);
  const std::string target = nvrtc_target(r.arch, r.arch_specific);
  const bool is_ptx = target.starts_with("compute_");
  const auto start = std::chrono::steady_clock::now();

  const auto& headers = embedded_device_headers();
  std::vector<const char*> header_names, header_texts;
  for (const EmbeddedHeader& header : headers) {
    header_names.push_back(header.name);
    header_texts.push_back(header.text);
  }
  const std::string file_name = r.kernel_name + ".cu";  // what NVRTC's diagnostics call the source
  Program program;
  check_nvrtc(nvrtcCreateProgram(&program.handle, r.source.c_str(), file_name.c_str(), static_cast<int>(headers.size()),
                                 header_texts.data(), header_names.data()),
              "nvrtcCreateProgram");
  // A name expression makes NVRTC fail right here, with the name in its log, when the kernel is missing.
  check_nvrtc(nvrtcAddNameExpression(program.handle, r.kernel_name.c_str()), "nvrtcAddNameExpression");

  const std::vector<std::string> options = detail::nvrtc_options(r, target);
  std::vector<const char*> option_ptrs;
  for (const std::string& option : options) option_ptrs.push_back(option.c_str());
  const nvrtcResult result =
      nvrtcCompileProgram(program.handle, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  std::string log = program_log(program.handle);
  if (result != NVRTC_SUCCESS)
    throw_error("NVRTC failed to compile kernel '" + r.kernel_name + "' for " + target + " (" +
                nvrtcGetErrorString(result) + "):\n" + log);

  const char* lowered = nullptr;
  check_nvrtc(nvrtcGetLoweredName(program.handle, r.kernel_name.c_str(), &lowered), "nvrtcGetLoweredName");
  if (lowered == nullptr || r.kernel_name != lowered)
    throw_argument_error("kernel_name", "an extern \"C\" __global__ function (unmangled)",
                         in_quotes(r.kernel_name) + ", which NVRTC mangles to " + in_quotes(lowered ? lowered : "?"));

  CompiledKernel out;
  size_t size = 0;
  if (is_ptx) {
    check_nvrtc(nvrtcGetPTXSize(program.handle, &size), "nvrtcGetPTXSize");  // counts the final NUL
    out.cubin.resize(size);
    check_nvrtc(nvrtcGetPTX(program.handle, out.cubin.data()), "nvrtcGetPTX");
  } else {
    check_nvrtc(nvrtcGetCUBINSize(program.handle, &size), "nvrtcGetCUBINSize");
    out.cubin.resize(size);
    if (size > 0) check_nvrtc(nvrtcGetCUBIN(program.handle, out.cubin.data()), "nvrtcGetCUBIN");
  }
  if (out.cubin.empty())
    throw_error("NVRTC produced no " + std::string(is_ptx ? "PTX" : "cubin") + " for kernel '" + r.kernel_name + "' (" +
                target + ")");
  out.is_ptx = is_ptx;
  out.target = target;
  out.resources = parse_ptxas_report(log, r.kernel_name);
  if (!is_ptx && out.resources.registers < 0)
    detail::warn_once("no-ptxas-report", "NVRTC returned no ptxas report for kernel '" + r.kernel_name + "' (" +
                                             target + "): its registers and spills are unknown");
  // (every config of a family shares its kernel name, so a per-name key would not tell configs apart: once)
  if (out.resources.wgmma_serialized)
    detail::warn_once("wgmma-serialized", "ptxas serialized the wgmmas of kernel '" + r.kernel_name + "' (" + target +
                                              "): it runs, but waits for each before the next (the NVRTC log says "
                                              "why; said once per process)");
  out.log = std::move(log);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace lutmm::jit

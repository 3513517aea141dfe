#pragma once
// The CPU GEMM kernels are built once per x86-64 feature level (function multi-versioning): the loader
// picks the AVX-512 / AVX2+FMA / baseline SSE2 copy for the machine it runs on, so one portable binary
// still uses wide vectors. Elsewhere the kernels are plain functions built for the compiler's target.
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(LUTMM_NO_CPU_CLONES)
#define LUTMM_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LUTMM_CPU_CLONES
#endif

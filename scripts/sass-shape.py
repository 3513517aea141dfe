#!/usr/bin/env python3
"""The shape of each kernel's SASS, without a GPU: registers, instructions before the first global->shared copy,
and the main loop's length and mix. Every device-code edit can move the register allocation of the 96-register
decode kernels (docs/NOTES.md v1.12, v1.31), so compare these before spending device time on an A/B.

  LUTMM_CACHE_DIR=/tmp/new build/lutmm precompile --shapes FILE --arch 90 --gpu 'NVIDIA H200'
  LUTMM_CACHE_DIR=/tmp/old .gpubin/lutmm_base precompile ...   (or the same binary with LUTMM_NVRTC_OPTIONS)
  scripts/sass-shape.py /tmp/new [--base /tmp/old]

Each argument is a lutmm kernel cache (its kernels/*.cubin, src/jit/disk_cache.hpp's layout) or one such file.
--sass FILE reads a `cuobjdump --dump-sass` listing instead (one kernel). The listing needs cuobjdump and nvdisasm
(CUDA's bin folder, PATH, $CUDA_HOME/bin; where the toolkit lacks them: `pip download nvidia-cuda-cuobjdump
nvidia-cuda-nvdisasm` and put the wheels' bin folders on PATH).

The main loop: from the last BAR.SYNC before the kernel's first MMA (HMMA or HGMMA) to the first branch after its
last one, counted statically (a cold path inside the loop, e.g. Stream-K's loader for another tile, counts too).
"""
import argparse
import collections
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

from sass_opcode import opcode  # (this folder is on sys.path: the script's own)

_INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_FUNCTION = re.compile(r"^\s+Function : (\S+)")
_REGISTERS = re.compile(r"Used (\d+) registers")
_MMA = ("HMMA", "HGMMA")
_COPIES = ("LDGSTS", "UTMALDG", "UBLKCP")


def parse_listing(text):
    """{function name: [instruction text, ...]} of a cuobjdump --dump-sass listing."""
    functions, name = {}, None
    for line in text.splitlines():
        m = _FUNCTION.match(line)
        if m:
            name = m.group(1)
            functions[name] = []
            continue
        m = _INSTRUCTION.match(line)
        if m and name is not None:
            functions[name].append(m.group(2))
    return functions


def summarize(instructions):
    """Counts of one kernel's listing (see the module's docstring for what the main loop is)."""
    ops = [opcode(i) for i in instructions]
    summary = {"total": len(ops), "prologue": None, "loop": None, "loop_mma": 0, "loop_mix": collections.Counter()}
    copy = next((i for i, o in enumerate(ops) if o in _COPIES), None)
    summary["prologue"] = copy
    mma = [i for i, o in enumerate(ops) if o in _MMA]
    if not mma:
        return summary
    start = max((i for i in range(mma[0]) if ops[i] == "BAR" and "SYNC" in instructions[i]), default=0)
    end = next((i for i in range(mma[-1] + 1, len(ops)) if ops[i] == "BRA"), len(ops) - 1)
    body = ops[start:end + 1]
    summary["loop"] = len(body)
    summary["loop_mma"] = sum(o in _MMA for o in body)
    summary["loop_mix"] = collections.Counter(body)
    return summary


def find_tool(name):
    candidates = [shutil.which(name)]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            candidates.append(os.path.join(root, "bin", name))
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def read_cache_file(path):
    """(cubin bytes, NVRTC log) of one kernel cache file (magic, version, flags, key, three sizes, checksum)."""
    data = open(path, "rb").read()
    if len(data) < 88 or data[:8] != b"LUTMMJIT":
        raise ValueError(f"{path}: not a lutmm kernel cache file (expected the magic 'LUTMMJIT')")
    flags = struct.unpack_from("<I", data, 12)[0]
    payload, log, _target = struct.unpack_from("<QQQ", data, 48)
    if flags & 1:
        raise ValueError(f"{path}: holds PTX, not a cubin")
    return data[88:88 + payload], data[88 + payload:88 + payload + log].decode("utf-8", "replace")


def listing_of_cubin(cubin):
    cuobjdump, nvdisasm = find_tool("cuobjdump"), find_tool("nvdisasm")
    if cuobjdump is None or nvdisasm is None:
        missing = " and ".join(t for t, at in (("cuobjdump", cuobjdump), ("nvdisasm", nvdisasm)) if at is None)
        raise RuntimeError(f"the listing needs cuobjdump and nvdisasm; not found: {missing} (looked in PATH, $CUDA_HOME/bin, "
                           "/usr/local/cuda/bin); `pip download nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm` has both")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + env.get("PATH", "")
        r = subprocess.run([cuobjdump, "--dump-sass", f.name], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"cuobjdump --dump-sass failed: {r.stderr.strip()}")
        return r.stdout


def traits_name(cubin, fallback):
    """The mangled name of the kernel's config struct (its static members' symbols name it: every lutmm kernel's
    entry is lutmm_gemm_sm80 or _sm90, so the entry name alone does not tell two configs apart)."""
    symbols = re.findall(rb"_ZN5lutmm[A-Za-z0-9_]+", cubin)
    owners = collections.Counter(re.sub(rb"\d+k[A-Z][A-Za-z0-9_]*E$", b"", s) for s in symbols)
    return owners.most_common(1)[0][0].decode() if owners else fallback


def kernels_of(path):
    """{config struct name: (summary, registers or None)} of a cache folder or file."""
    files = [path]
    if os.path.isdir(path):
        folder = os.path.join(path, "kernels") if os.path.isdir(os.path.join(path, "kernels")) else path
        files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".cubin"))
        if not files:
            raise ValueError(f"{path}: no kernels/*.cubin (fill it with `LUTMM_CACHE_DIR={path} lutmm precompile ...`)")
    kernels = {}
    for f in files:
        cubin, log = read_cache_file(f)
        if b"\x7fELF" not in cubin[:4]:
            raise ValueError(f"{f}: its payload is not a cubin (no ELF header)")
        registers = _REGISTERS.search(log)
        for name, instructions in parse_listing(listing_of_cubin(cubin)).items():
            kernels[traits_name(cubin, name)] = (summarize(instructions), int(registers.group(1)) if registers else None)
    return kernels


def short_name(name, width=60):
    """The template arguments of a mangled lutmm config name, compacted ('Li64E' -> '64')."""
    m = re.search(r"^_ZN5lutmm\d+(\w*?Kernel)I(.*)", name)
    if not m:
        return name[:width]
    args = re.sub(r"L[ib](\d+)E", r"\1,", m.group(2)).rstrip("E").rstrip(",")
    return (m.group(1) + "<" + args + ">")[:width]


def row(summary, registers):
    mix = summary["loop_mix"]
    top = " ".join(f"{o}:{n}" for o, n in mix.most_common(4))
    return (f"{registers if registers is not None else '-':>4} {summary['prologue'] if summary['prologue'] is not None else '-':>8} "
            f"{summary['loop'] if summary['loop'] is not None else '-':>6} {summary['loop_mma']:>4} {summary['total']:>6}  {top}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("caches", nargs="*", help="kernel cache folders or .cubin files")
    parser.add_argument("--base", help="a cache to compare with (kernels matched by name)")
    parser.add_argument("--sass", help="a cuobjdump --dump-sass listing to summarize instead")
    args = parser.parse_args()
    header = f"{'kernel (config struct)':60} {'regs':>4} {'prologue':>8} {'loop':>6} {'mma':>4} {'total':>6}  loop's commonest opcodes"
    if args.sass:
        functions = parse_listing(open(args.sass).read())
        if not functions:
            sys.exit(f"sass-shape: {args.sass} holds no 'Function :' listing (expected cuobjdump --dump-sass output)")
        print(header)
        for name, instructions in functions.items():
            print(f"{short_name(name):60} {row(summarize(instructions), None)}")
        return
    if not args.caches:
        parser.error("give a kernel cache (or --sass FILE)")
    try:
        base = kernels_of(args.base) if args.base else {}
        caches = [kernels_of(cache) for cache in args.caches]
    except (ValueError, RuntimeError, OSError) as e:
        sys.exit(f"sass-shape: {e}")
    print(header + ("   (base: regs, prologue, loop)" if base else ""))
    for kernels in caches:
        for name, (summary, registers) in sorted(kernels.items()):
            line = f"{short_name(name):60} {row(summary, registers)}"
            if name in base:
                b, breg = base[name]
                # (a loop 2% longer or shorter than the base's: its allocation or schedule moved)
                moved = b["loop"] and summary["loop"] and abs(summary["loop"] - b["loop"]) > 0.02 * b["loop"]
                line += f"   ({breg}, {b['prologue']}, {b['loop']}){'  <- loop moved' if moved else ''}"
            elif base:
                line += "   (not in the base)"
            print(line)


if __name__ == "__main__":
    main()

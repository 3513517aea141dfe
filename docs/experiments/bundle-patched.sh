#!/usr/bin/env bash
# Builds the lutmm command and test_gpu with one of this folder's patches applied into .gpubin/DIR (with libfmt), for
# a recipe run as LUTMM_PREBUILT=.gpubin/DIR, then takes the patch back out and rebuilds, so the tree and build/ are
# main's again. Run after scripts/gpu-bundle (which fills .gpubin/ itself).
#   docs/experiments/bundle-patched.sh m16-more-warps.patch m16
#   docs/experiments/bundle-patched.sh whole-k-decode-tiles.patch wk
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: $0 PATCH DIR (a patch of docs/experiments, a folder name under .gpubin)" >&2; exit 2; }
patch=docs/experiments/$1
dest=.gpubin/$2
[ -f "$patch" ] || { echo "bundle-patched: no $patch" >&2; exit 2; }
[ -x build/lutmm ] || { echo "bundle-patched: build/ has no lutmm: run scripts/gpu-bundle first" >&2; exit 2; }
git apply "$patch"
trap 'git apply -R "$patch" && cmake --build build --target lutmm test_gpu >/dev/null' EXIT
cmake --build build --target lutmm test_gpu >/dev/null
mkdir -p "$dest"
cp build/lutmm build/test_gpu "$dest/"
cp -L "$(ldd build/lutmm | awk '/libfmt/ {print $3}')" "$dest/"
echo "bundle-patched: $dest holds lutmm and test_gpu built with $1"

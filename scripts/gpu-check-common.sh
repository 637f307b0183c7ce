# Sourced by the gpu-check-*.sh scripts: the log folder ($OUT, or ./gpu-check), the unpacked
# gpu-bundle, and two helpers.
#   header FILE   starts a log with the GPU, the driver, the time and the commit ($COMMIT when
#                 given: the device's own git HEAD may be stale, the bundle having been built elsewhere)
#   holding TEST  the test binary of the bundle that holds TEST
out=${OUT:-gpu-check}
mkdir -p "$out"
bash .gpu/run list > /dev/null || exit 1
dir=$(ls -d "${TMPDIR:-/tmp}"/gpu-bundle-*/ 2>/dev/null | head -1)
[ -n "$dir" ] || { echo "gpu-check: no unpacked bundle" >&2; exit 1; }
header() { { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; echo "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}"; } > "$out/$1"; }
holding() { for t in "$dir"/tests/*; do grep -Fxq -- "$1: test" <<< "$("$t" --list 2>/dev/null)" && echo "$t"; done; }

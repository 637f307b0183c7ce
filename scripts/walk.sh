#!/usr/bin/env bash
# walk.sh: the walk of a run: the workspace's source files whose code one run of a program
# executes, from LLVM's source-based coverage (a file counts where a line of it ran). What a
# maintainer reads to follow the run, and what a change to the run may have to touch.
#
#   scripts/walk.sh build                 # the programs, instrumented, in target/walk (release
#                                         # profile; needs `rustup component add llvm-tools`)
#   scripts/walk.sh run NAME ARGS...      # run program NAME once; its profile in target/walk/profiles
#   scripts/walk.sh files PROFILE...      # the files those profiles ran, a line each, by crate,
#                                         # with the lines of code of each that ran (comments,
#                                         # blank lines and tests not counted)
#   scripts/walk.sh pack [NAME...]        # the instrumented programs (or those named) packed into
#                                         # .walk/ to carry to a GPU machine; there: bash .walk/run
#                                         # NAME ARGS... writes NAME.profraw into $OUT; back here:
#                                         # walk.sh files PROFILE (the programs built here map it)
#
# A program that starts itself again (step 13, to find NCCL) keeps only the counters of its
# second start: exec leaves no exit at which the first would write them.
#
# Example, the walk of step 04 emulated and on a GPU:
#   scripts/walk.sh build && scripts/walk.sh run step04_tiled --emulate --size 32
#   scripts/walk.sh files target/walk/profiles/step04_tiled.profraw
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
target=target/walk
host=$(rustc -vV | sed -n 's/^host: //p')
bin=$target/$host/release
tools=$(rustc --print sysroot)/lib/rustlib/$host/bin

need_tools() {
  [ -x "$tools/llvm-profdata" ] || {
    echo "walk: llvm-profdata is missing; install it with: rustup component add llvm-tools" >&2
    exit 1
  }
}

verb=${1:-}; shift || true
case "$verb" in
  build)
    # Instrumented apart from every other build: its own target folder. Naming the target keeps
    # RUSTFLAGS off the build scripts and macros, which would otherwise leave profiles behind.
    RUSTFLAGS="-C instrument-coverage" CARGO_TARGET_DIR=$target \
      cargo build --release --workspace --bins --target "$host" ;;
  run)
    name=${1:?walk: say which program to run}; shift
    [ -x "$bin/$name" ] || { echo "walk: $bin/$name is not built; run: scripts/walk.sh build" >&2; exit 1; }
    mkdir -p "$target/profiles"
    rm -f "$target/profiles/$name.profraw"
    LLVM_PROFILE_FILE="$root/$target/profiles/$name.profraw" "$bin/$name" "$@" ;;
  files)
    need_tools
    [ $# -gt 0 ] || { echo "walk: name the profiles (.profraw) to read" >&2; exit 2; }
    merged=$(mktemp --suffix=.profdata)
    trap 'rm -f "$merged"' EXIT
    "$tools/llvm-profdata" merge -sparse "$@" -o "$merged"
    # Every instrumented program is an object: a file counts once whichever program ran it.
    objects=()
    for b in "$bin"/*; do
      [ -f "$b" ] && [ -x "$b" ] && objects+=(--object "$b")
    done
    "$tools/llvm-cov" export --summary-only --instr-profile="$merged" "${objects[@]:1}" |
      python3 -c '
import json, os, sys
root = sys.argv[1]
files = sorted(
    (os.path.relpath(f["filename"], root), f["summary"]["lines"]["covered"], f["summary"]["lines"]["count"])
    for d in json.load(sys.stdin)["data"]
    for f in d["files"]
    if f["summary"]["lines"]["covered"] > 0 and f["filename"].startswith(root + "/")
)
crates = {}
for name, ran, count in files:
    crates.setdefault(name.split("/")[0], []).append((name, ran, count))
for crate, fs in crates.items():
    print(f"{crate}: {len(fs)} files, {sum(r for _, r, _ in fs)} lines of code run")
    for name, ran, count in fs:
        print(f"  {name}  ({ran} of its {count} lines of code)")
print(f"in all: {len(files)} files, {sum(r for _, r, _ in files)} lines of code run")
' "$root" ;;
  pack)
    rm -rf .walk && mkdir -p .walk
    exclude=$(git rev-parse --git-path info/exclude)
    grep -qxF '/.walk/' "$exclude" 2>/dev/null || echo '/.walk/' >> "$exclude"
    names=("$@")
    [ ${#names[@]} -gt 0 ] || mapfile -t names < <(cd "$bin" && find . -maxdepth 1 -type f -perm -u+x -printf '%f\n')
    # Stripped of symbols: the counters' map is read from the programs here, not from the pack.
    mkdir -p .walk/bin
    for n in "${names[@]}"; do
      [ -x "$bin/$n" ] || { echo "walk: $bin/$n is not built" >&2; exit 1; }
      strip -o ".walk/bin/$n" "$bin/$n"
    done
    tar -C .walk/bin -cf - . | xz -T0 -6 > .walk/pack.tar.xz && rm -rf .walk/bin
    cat > .walk/run <<'EOF'
#!/usr/bin/env bash
# Runs one instrumented program of the pack; its profile goes to $OUT/NAME.profraw.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir="${TMPDIR:-/tmp}/walk-$(cksum < "$here/pack.tar.xz" | cut -d' ' -f1)"
[ -d "$dir" ] || { mkdir -p "$dir" && tar -xJf "$here/pack.tar.xz" -C "$dir"; }
name=$1; shift
LLVM_PROFILE_FILE="${OUT:-.}/$name.profraw" "$dir/$name" "$@"
EOF
    chmod +x .walk/run
    du -sh .walk >&2 ;;
  *) echo "usage: scripts/walk.sh build | run NAME ARGS... | files PROFILE... | pack [NAME...]" >&2; exit 2 ;;
esac

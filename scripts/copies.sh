#!/usr/bin/env bash
# Writes the diff beside every variant and stage (stepNN_…/variants/NAME.diff, stages/NAME.diff):
# `diff -u BASE FILE` from the repository's root, BASE being the kernel that the copy's first line
# names (`// Variant of stepNN_…/src/kernel.cu: …`). The steps' tests apply each diff to its base
# and want the copy exactly (common/src/testing/copies.rs).
#
#   scripts/copies.sh            # after editing a copy: its diff again
#   scripts/copies.sh --rebase   # after editing a base: each copy not edited since the last
#                                # commit is rebuilt first, as its base plus its diff (patch, no
#                                # fuzz), so that the base's change reaches it
#
# Copies are taken in the order of their paths, so that a stage is rebuilt before the next stage,
# which copies it. A diff that no longer applies is reported and its copy left as it was: carry
# the change by hand, then run the script again without --rebase.
set -euo pipefail
cd "$(dirname "$0")/.."

rebase=0
case "${1:-}" in
    --rebase) rebase=1 ;;
    "") ;;
    *) echo "usage: scripts/copies.sh [--rebase]" >&2; exit 2 ;;
esac

status=0
for copy in step*/variants/*.cu step*/stages/*.cu; do
    [ -e "$copy" ] || continue
    base=$(head -n 1 "$copy" | sed 's/$/ /' | grep -o '[^ ]*\.cu: ' | head -n 1 | sed 's/: $//' || true)
    if [ -z "$base" ] || [ ! -f "$base" ]; then
        echo "copies: $copy: its first line names no kernel that is there (\`// Variant of BASE: …\`)" >&2
        status=1
        continue
    fi
    diff_file=${copy%.cu}.diff
    if [ "$rebase" = 1 ] && [ -f "$diff_file" ] && git ls-files --error-unmatch "$copy" >/dev/null 2>&1 &&
        git diff --quiet HEAD -- "$copy"; then
        rebuilt=$(mktemp)
        if patch --quiet --batch --fuzz=0 --reject-file=- --output="$rebuilt" "$base" "$diff_file" >/dev/null; then
            cat "$rebuilt" >"$copy"
            rm -f "$rebuilt"
        else
            rm -f "$rebuilt"
            echo "copies: $diff_file no longer applies to $base: carry the change into $copy by hand" >&2
            status=1
            continue  # its old diff stays, so that its test still fails
        fi
    fi
    diff -u --label "$base" --label "$copy" "$base" "$copy" >"$diff_file" || [ $? = 1 ]
done
exit $status

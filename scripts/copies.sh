#!/usr/bin/env bash
# Writes the diff beside every variant and stage kept as a full copy (stepNN_…/variants/NAME.diff,
# stages/NAME.diff): `diff -u BASE FILE` from the repository's root, BASE being the kernel that the
# copy's first line names (`// Variant of stepNN_…/src/kernel.cu: …`). A variant that changes less
# than a tenth of its base is kept as that diff alone, with no copy (variants/NAME.diff whose `+++`
# line names variants/NAME.cu): the script writes it again from its base and its change, so that
# its line numbers follow the base. The steps' tests apply each diff to its base and want the copy
# exactly (common/src/testing/copies.rs). A variant may also keep a full copy of one of its step's
# include files (variants/NAME.cuh, whose first line names src/FILE.cuh), which its kernel includes.
#
#   scripts/copies.sh            # after editing a copy: its diff again
#   scripts/copies.sh --rebase   # after editing a base: each copy not edited since the last
#                                # commit is rebuilt first, as its base plus its diff (patch, no
#                                # fuzz), so that the base's change reaches it
#
# Copies are taken in the order of their paths, so that a stage is rebuilt before the next stage,
# which copies it. A diff that no longer applies is reported and its copy left as it was: carry
# the change by hand, then run the script again without --rebase. To edit a variant kept as its
# diff alone, write it out (`patch -o variants/NAME.cu BASE variants/NAME.diff`), edit it, run the
# script, and delete the copy again if its change stays under a tenth of its base.
set -euo pipefail
cd "$(dirname "$0")/.."

rebase=0
case "${1:-}" in
    --rebase) rebase=1 ;;
    "") ;;
    *) echo "usage: scripts/copies.sh [--rebase]" >&2; exit 2 ;;
esac

status=0
for copy in step*/variants/*.cu step*/variants/*.cuh step*/stages/*.cu; do
    [ -e "$copy" ] || continue
    base=$(head -n 1 "$copy" | sed 's/$/ /' | grep -o '[^ ]*\.cuh\?: ' | head -n 1 | sed 's/: $//' || true)
    if [ -z "$base" ] || [ ! -f "$base" ]; then
        echo "copies: $copy: its first line names no kernel that is there (\`// Variant of BASE: …\`)" >&2
        status=1
        continue
    fi
    diff_file=${copy%.*}.diff
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

# Variants kept as their diff alone: the base is the file their `---` line names.
for diff_file in step*/variants/*.diff; do
    [ -e "$diff_file" ] && [ ! -e "${diff_file%.diff}.cu" ] && [ ! -e "${diff_file%.diff}.cuh" ] || continue
    base=$(head -n 1 "$diff_file" | sed -n 's/^--- \([^	]*\).*/\1/p')
    if [ -z "$base" ] || [ ! -f "$base" ]; then
        echo "copies: $diff_file: its first line names no kernel that is there (\`--- BASE\`)" >&2
        status=1
        continue
    fi
    made=$(mktemp)
    if patch --quiet --batch --fuzz=0 --reject-file=- --output="$made" "$base" "$diff_file" >/dev/null; then
        diff -u --label "$base" --label "${diff_file%.diff}.cu" "$base" "$made" >"$diff_file" || [ $? = 1 ]
    else
        echo "copies: $diff_file no longer applies to $base: carry the change by hand" >&2
        status=1
    fi
    rm -f "$made"
done
exit $status

#!/usr/bin/env bash
# Builds the book and fails on a broken include, anchor or local link, a page SUMMARY.md does not
# list, or a figure reference its record does not resolve (the figures preprocessor,
# docs/book.toml); on a page of earlier runs or a records part of SUMMARY.md that does not list
# the records as they are (scripts/earlier-runs.py --check); then checks what a reader meets
# (scripts/check-reading.py: a sidebar of at most 40 entries, the records hidden from it, word
# caps, the README's length, commit hashes and words of the workshop in a chapter, code wider
# than 100 columns, records missing from the page of earlier runs).
#   scripts/check-docs.sh [MDBOOK]      (default: mdbook on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
mdbook=${1:-mdbook}

# mdbook runs the preprocessor through `cargo run`; built here, its build stays out of mdbook's log.
cargo build --quiet -p figures
out=$("$mdbook" build docs 2>&1) || { echo "$out"; exit 1; }
if echo "$out" | grep -qE "\[(ERROR|WARN)\]"; then
    echo "$out"
    echo "check-docs: mdbook reported problems" >&2
    exit 1
fi

status=0
# mdbook renders only the pages SUMMARY.md lists: any other page is left out of the book, and a
# link to it finds no page there, though its source is in docs/src.
while IFS= read -r md; do
    page=${md#docs/src/}
    [ "$page" = SUMMARY.md ] && continue
    grep -qF "]($page)" docs/src/SUMMARY.md || { echo "$md: not in docs/src/SUMMARY.md, so the book has no page for it"; status=1; }
done < <(find docs/src -name '*.md')
while IFS= read -r md; do
    dir=$(dirname "$md")
    # Every include of source sits in a fenced block that names its language: outside a fence,
    # Markdown renders the code as prose (comments merged, `__x__` turned bold, `<` and `*` eaten).
    fences=$(awk -v md="$md" '
        /^[ \t]*(```|~~~)/ {
            if (open) { open = 0 } else { open = 1; lang = $0; sub(/^[ \t]*(```|~~~)[ \t]*/, "", lang); start = NR }
            next
        }
        /(^|[^\\])\{\{#include / {
            if (!open) print md ":" NR ": an include outside a code fence (put it between ```LANG and ```)"
            else if (lang == "") print md ":" NR ": an include in a code fence without a language (```" "rust, ```cuda, …; fence opened at line " start ")"
        }' "$md")
    if [ -n "$fences" ]; then echo "$fences"; status=1; fi
    # {{#include path:anchor}}: the file exists and holds the anchor. An escaped one,
    # \{{#include …}}, is text the page shows (mdbook drops the backslash) and is left alone.
    while IFS= read -r inc; do
        path=${inc%%:*}; anchor=""; [ "$inc" != "$path" ] && anchor=${inc#*:}
        if [ ! -f "$dir/$path" ]; then
            echo "$md: include of a missing file: $path"; status=1
        elif [ -n "$anchor" ] && ! grep -q "ANCHOR: $anchor\$" "$dir/$path"; then
            echo "$md: $path has no anchor '$anchor'"; status=1
        fi
    done < <(grep -oE '(^|[^\\])\{\{#include [^}]+\}\}' "$md" | sed -E 's/^.?\{\{#include ([^}]+)\}\}/\1/')
    # [text](target) and [text](target "title"): local targets exist.
    while IFS= read -r target; do
        file=${target%% *}; file=${file%%#*}
        [ -z "$file" ] && continue
        case "$file" in http://*|https://*|mailto:*) continue ;; esac
        [ -e "$dir/$file" ] || { echo "$md: broken link: $target"; status=1; }
    done < <(grep -oE '\]\([^)]+\)' "$md" | sed -E 's/^\]\((.*)\)$/\1/')
done < <(find docs/src -name '*.md')
python3 scripts/earlier-runs.py --check || status=1
python3 scripts/check-reading.py || status=1
python3 scripts/check-figures.py || status=1
[ $status -eq 0 ] && echo "check-docs: book built, includes and links resolve, the reader's rules hold"
exit $status

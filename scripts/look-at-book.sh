#!/usr/bin/env bash
# Looks at the built book as a reader does, in headless Chromium at a 1280 px window: for every
# page, how many code blocks and tables scroll sideways (the column must hold them), and a
# screenshot of each page into a folder. Needs chromium (Debian: apt-get install chromium).
#
#   mdbook build docs && scripts/look-at-book.sh [SHOTS]      (default: target/book-shots)
#
# Exits 1 when a code block or table of a page scrolls.
set -euo pipefail
cd "$(dirname "$0")/.."
shots=${1:-target/book-shots}
mkdir -p "$shots"
book=$(pwd)/docs/book
[ -f "$book/index.html" ] || { echo "look-at-book: build the book first (mdbook build docs)" >&2; exit 2; }
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-background-networking --no-first-run
    --disable-component-update --disable-sync --hide-scrollbars)
pages=$(cd "$book" && ls ./*.html | sed 's#^\./##' | grep -vE '^(print|toc|404)\.html$')
probe=$(mktemp --suffix=.html)
trap 'rm -f "$probe"' EXIT
{
    echo "<html><body><script>var pages = ["
    for p in $pages; do echo "'$p',"; done
    cat <<JS
]; var out = [], i = 0;
function next() {
  if (i >= pages.length) { var d = document.createElement('div'); d.id = 'r';
    d.textContent = 'LOO' + 'KED ' + out.join(' '); document.body.appendChild(d); return; }
  var f = document.createElement('iframe'); f.width = 1280; f.height = 1000;
  f.onload = function () { var d = f.contentDocument, wide = 0;
    d.querySelectorAll('pre, pre > code, table').forEach(function (e) { if (e.scrollWidth > e.clientWidth + 1) wide++; });
    out.push(pages[i] + '=' + wide); f.remove(); i++; next(); };
  f.src = 'file://$book/' + pages[i]; document.body.appendChild(f);
}
next();
</script></body></html>
JS
} > "$probe"
report=$("${chrome[@]}" --allow-file-access-from-files --disable-web-security --virtual-time-budget=60000 \
    --window-size=1280,1000 --dump-dom "file://$probe" 2>/dev/null | grep -o 'LOOKED [^<]*' | sed 's/^LOOKED //')
[ -n "$report" ] || { echo "look-at-book: Chromium reported nothing" >&2; exit 2; }
status=0
for entry in $report; do
    page=${entry%=*}; wide=${entry#*=}
    "${chrome[@]}" --window-size=1280,2400 --screenshot="$shots/${page%.html}.png" "file://$book/$page" 2>/dev/null
    if [ "$wide" != 0 ]; then echo "look-at-book: $page: $wide code blocks or tables scroll sideways at 1280 px"; status=1; fi
done
echo "look-at-book: $(wc -w <<< "$report") pages looked at; screenshots in $shots"
exit $status

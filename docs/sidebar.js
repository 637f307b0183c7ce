// The sidebar holds the course alone: the records, listed after SUMMARY.md's separator so that
// mdBook renders them as pages, are hidden there by wide.css. On a course page, an arrow to a
// hidden page is removed: the last course page would otherwise point its "next" arrow (and the
// right-arrow key, which follows it) at the first record. On a record's page the arrows stay, and
// the sidebar marks "Earlier runs", the page that lists the records.
(function () {
    var spacer = document.querySelector("#sidebar ol.chapter > li.spacer");
    if (!spacer) {
        return;
    }
    var hidden = new Set();
    for (var li = spacer.nextElementSibling; li; li = li.nextElementSibling) {
        li.querySelectorAll("a[href]").forEach(function (a) { hidden.add(a.href); });
    }
    // The page's own address, without the query (search adds ?highlight=…) or the anchor.
    if (hidden.has(document.location.href.split(/[?#]/)[0])) {
        var earlier = document.querySelector('#sidebar ol.chapter a[href$="results/earlier.html"]');
        if (earlier) {
            earlier.classList.add("active");
            earlier.scrollIntoView({ block: "center" });
        }
        return;
    }
    document.querySelectorAll("a.nav-chapters, a.mobile-nav-chapters").forEach(function (a) {
        if (hidden.has(a.href)) {
            a.remove();
        }
    });
})();

// Small enhancements for Sprig pages; everything works without them.
(function () {
  "use strict";

  // "Show more" on browse: fetch the next page's cards and append them in place, when it is
  // tapped. Not as it scrolls into view: the footer (the language switch) sits below the list,
  // and a page that grows as a reader nears it keeps pushing it out of reach on a phone.
  function loadMore(link) {
    if (link.dataset.busy) return;
    link.dataset.busy = "1";
    // Both labels come from the page, in the reader's language.
    var label = link.textContent;
    link.textContent = link.dataset.loadingLabel || label;
    var url = new URL(link.href, window.location.href);
    url.searchParams.set("partial", "1");
    fetch(url.toString(), { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        // Server-rendered, escaped markup from this site; parsed inert, then moved in.
        var doc = new DOMParser().parseFromString("<ul>" + html + "</ul>", "text/html");
        var row = link.closest("li");
        var list = row.parentNode;
        var items = Array.from(doc.body.firstChild.children);
        items.forEach(function (item) { list.insertBefore(document.importNode(item, true), row); });
        row.remove();
        var next = list.querySelector("a[data-more]");
        if (next) watch(next);
        // Reading goes on at the first new card (and a keyboard's focus with it).
        var firstNew = items.length ? list.querySelector("li.card:nth-last-of-type(" + items.length + ") a") : null;
        if (firstNew) firstNew.focus();
      })
      .catch(function () {
        delete link.dataset.busy;
        link.textContent = label;
        window.location.href = link.href;
      });
  }

  function watch(link) {
    link.addEventListener("click", function (event) { event.preventDefault(); loadMore(link); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("a[data-more]").forEach(watch);
  });
})();

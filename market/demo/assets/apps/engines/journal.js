// Tasting/reading journal: star ratings, search, sort, top picks, average price.
const LOG = makeLog();
let sortBy = "date";
let query = "";

function stars(n) {
  const k = Math.max(0, Math.min(5, Math.round(num(n))));
  return "★★★★★".slice(0, k) + "☆☆☆☆☆".slice(0, 5 - k);
}

function describe(i) {
  const bits = CONFIG.detailFields.map((name) => {
    const f = field(name);
    const v = i[name];
    if (v === undefined || v === "" || v === 0) return "";
    if (f.type === "select") return optionLabel(name, v);
    if (f.money) return money(v);
    return String(v) + (f.unit ? " " + f.unit : "");
  }).filter(Boolean);
  return withExtra(stars(i.rating) + " " + (i.name || "?") + (bits.length ? " · " + bits.join(" · ") : "") + (i.notes ? " — " + i.notes : ""), i);
}

function render() {
  let items = LOG.items.slice();
  if (query) items = items.filter((i) => JSON.stringify(i).toLowerCase().indexOf(query) >= 0);
  // renderList shows newest last-in first, so sort ascending to show the best on top.
  if (sortBy === "rating") items.sort((a, b) => num(a.rating) - num(b.rating));
  const rated = LOG.items.filter((i) => num(i.rating) > 0);
  const avg = rated.length ? rated.reduce((s, i) => s + num(i.rating), 0) / rated.length : 0;
  $("today-total").textContent = LOG.items.length + " · " + T.average + " " + (avg ? fmt(avg) + " ★" : "–");
  const priced = CONFIG.priceField ? LOG.items.filter((i) => num(i[CONFIG.priceField]) > 0) : [];
  $("status").textContent = priced.length
    ? T.average + " " + field(CONFIG.priceField).label + ": " + money(priced.reduce((s, i) => s + num(i[CONFIG.priceField]), 0) / priced.length)
    : "";
  $("sort").textContent = sortBy === "rating" ? T.sortDate : T.sortRating;
  renderList($("list"), items, describe, (i) => {
    LOG.remove(i.id);
    render();
  });
  const box = $("top");
  clear(box);
  LOG.items.slice().sort((a, b) => num(b.rating) - num(a.rating)).slice(0, 3).forEach((i) => {
    box.appendChild(el("li", "item", stars(i.rating) + " " + i.name));
  });
}

function init() {
  $("sort").addEventListener("click", () => {
    sortBy = sortBy === "rating" ? "date" : "rating";
    render();
  });
  const search = $("search");
  search.addEventListener("input", () => {
    query = String(search.value || "").toLowerCase().trim();
    render();
  });
  onSubmit((v) => {
    if (!v.name) return false;
    LOG.add(v);
    render();
    return true;
  });
  render();
}

// Weekly meal grid from a recipe box; avoided ingredients are flagged and can't be
// picked; the shopping list is scaled to the household size.
const OWN = makeLog(".recipes");
let plan = load(".plan", {});

function recipes() {
  return CONFIG.recipes.concat(OWN.items.map((r) => ({ name: r.name, tags: ["own"], ingredients: r.ingredients || [] })));
}

function flagged(recipe) {
  const text = (recipe.name + " " + recipe.tags.join(" ") + " " + recipe.ingredients.map((i) => i[0]).join(" ")).toLowerCase();
  return CONFIG.avoid.filter((word) => text.indexOf(word.toLowerCase()) >= 0);
}

function shopping() {
  const need = {};
  const factor = CONFIG.servings / CONFIG.baseServings;
  Object.keys(plan).forEach((slot) => {
    const r = recipes().find((x) => x.name === plan[slot]);
    if (!r) return;
    r.ingredients.forEach((ing) => {
      const key = ing[0] + "|" + (ing[2] || "");
      need[key] = (need[key] || 0) + num(ing[1]) * factor;
    });
  });
  return Object.keys(need).sort().map((k) => {
    const parts = k.split("|");
    return parts[0] + ": " + fmt(need[k]) + (parts[1] ? " " + parts[1] : "");
  });
}

function slotSelect(day, slot) {
  // Busy nights (practice, late shifts) only offer recipes tagged "quick".
  const busy = CONFIG.busyDays.indexOf(day) >= 0;
  const select = el("select");
  const blank = el("option", "", "—");
  blank.value = "";
  select.appendChild(blank);
  recipes().forEach((r) => {
    const warn = flagged(r);
    const o = el("option", "", r.name + (warn.length ? " ⚠ " + T.avoidWarning + " " + warn.join(", ") : ""));
    o.value = r.name;
    o.disabled = warn.length > 0 || (busy && r.tags.indexOf("quick") < 0);
    select.appendChild(o);
  });
  select.value = plan[slot] || "";
  select.addEventListener("change", () => {
    if (select.value) plan[slot] = select.value;
    else delete plan[slot];
    save(plan, ".plan");
    render();
  });
  return select;
}

function render() {
  const grid = $("grid");
  clear(grid);
  const head = el("tr");
  head.appendChild(el("th", "", ""));
  CONFIG.meals.forEach((m) => head.appendChild(el("th", "", m[1])));
  grid.appendChild(head);
  CONFIG.days.forEach((d) => {
    const row = el("tr");
    row.appendChild(el("th", "", d[1] + (CONFIG.busyDays.indexOf(d[0]) >= 0 ? " ⚡" : "")));
    CONFIG.meals.forEach((m) => {
      const cell = el("td");
      cell.appendChild(slotSelect(d[0], d[0] + "|" + m[0]));
      row.appendChild(cell);
    });
    grid.appendChild(row);
  });
  const filled = Object.keys(plan).length;
  const slots = CONFIG.days.length * CONFIG.meals.length;
  $("today-total").textContent = T.plan + ": " + filled + " / " + slots;
  $("status").textContent = CONFIG.servings + " " + T.servings + (CONFIG.avoid.length ? " · " + CONFIG.avoidLabel : "");
  progress("progress-fill", filled, slots, false);
  const list = $("list");
  clear(list);
  const lines = shopping();
  lines.forEach((line) => list.appendChild(el("li", "item", line)));
  if (!lines.length) list.appendChild(el("li", "empty", T.empty));
  renderList($("own"), OWN.items, (r) => r.name + " (" + (r.ingredients || []).length + ")", (r) => {
    OWN.remove(r.id);
    render();
  });
}

function surprise() {
  CONFIG.days.forEach((d) => CONFIG.meals.forEach((m) => {
    const busy = CONFIG.busyDays.indexOf(d[0]) >= 0;
    const pool = recipes().filter((r) => !flagged(r).length && (!busy || r.tags.indexOf("quick") >= 0));
    const slot = d[0] + "|" + m[0];
    if (!plan[slot] && pool.length) plan[slot] = pool[Math.floor(Math.random() * pool.length)].name;
  }));
  save(plan, ".plan");
  render();
}

function parseIngredients(text) {
  return String(text || "")
    .split(/\n|;/)
    .map((line) => line.split(",").map((p) => p.trim()))
    .filter((p) => p[0])
    .map((p) => [p[0], num(p[1]) || 1, p[2] || ""]);
}

function init() {
  $("surprise").addEventListener("click", surprise);
  $("clear-plan").addEventListener("click", () => {
    plan = {};
    save(plan, ".plan");
    render();
  });
  onSubmit((v) => {
    if (!v.name) return false;
    OWN.add({ name: v.name, ingredients: parseIngredients(v.ingredients) });
    render();
    return true;
  });
  render();
}

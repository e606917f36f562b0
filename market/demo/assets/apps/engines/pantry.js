// Pantry/freezer stock sorted by expiry; +/- to use things up.
const LOG = makeLog();

function render() {
  const today = dayKey();
  const items = LOG.items.slice().sort((a, b) => String(a.expires || "9999").localeCompare(String(b.expires || "9999")));
  const soon = items.filter((i) => i.expires && daysBetween(today, i.expires) <= CONFIG.warnDays);
  $("today-total").textContent = items.length + " · " + T.expiring + ": " + soon.length;
  $("status").textContent = soon.slice(0, 3).map((i) => i.name).join(", ");
  const box = $("list");
  clear(box);
  if (!items.length) box.appendChild(el("li", "empty", T.empty));
  items.forEach((i) => {
    const left = i.expires ? daysBetween(today, i.expires) : null;
    let cls = "item";
    if (left !== null && left < 0) cls = "item overdue";
    else if (left !== null && left <= CONFIG.warnDays) cls = "item due";
    const li = el("li", cls);
    const when = left === null ? "" : left < 0 ? " · " + T.expired : " · " + T.inDays + " " + left + " " + T.days;
    li.appendChild(el("span", "item-text", withExtra(i.name + " × " + fmt(i.qty) + " · " + optionLabel("where", i.where) + when, i)));
    li.appendChild(button("−", "small", () => {
      i.qty = num(i.qty) - 1;
      if (i.qty <= 0) LOG.remove(i.id);
      else save(LOG.items);
      render();
    }));
    li.appendChild(button("+", "small", () => {
      i.qty = num(i.qty) + 1;
      save(LOG.items);
      render();
    }));
    li.appendChild(deleteButton(() => {
      LOG.remove(i.id);
      render();
    }));
    box.appendChild(li);
  });
  showWarnings(items);
  const counts = {};
  items.forEach((i) => {
    const k = optionLabel("where", i.where);
    counts[k] = (counts[k] || 0) + 1;
  });
  cssBars($("groups"), Object.keys(counts).map((k) => ({ label: k, value: counts[k] })), "");
}

function init() {
  onSubmit((v) => {
    if (!v.name) return false;
    LOG.add(Object.assign(v, { qty: v.qty > 0 ? v.qty : 1 }));
    render();
    return true;
  });
  render();
}

// Recurring tasks ("every N days"): next due date, overdue first, optional cost per month.
const OWN = makeLog(".tasks");
let last = load(".last", {});

function tasks() {
  const base = CONFIG.tasks.map((t) => ({ id: t[0], label: t[1], every: t[2], cost: t[3] || 0, own: false }));
  return base.concat(OWN.items.map((t) => ({ id: t.id, label: t.label, every: num(t.every) || 7, cost: num(t.cost), own: true })));
}

function render() {
  const today = dayKey();
  const list = tasks().map((t) => Object.assign(t, { due: last[t.id] ? addDays(last[t.id], t.every) : today }));
  list.sort((a, b) => (a.due < b.due ? -1 : a.due > b.due ? 1 : 0));
  const dueNow = list.filter((t) => t.due <= today).length;
  const overdue = list.filter((t) => t.due < today).length;
  $("today-total").textContent = dueNow + " " + T.dueToday + (overdue ? " · " + overdue + " " + T.overdue : "");
  const monthly = list.reduce((s, t) => s + (t.cost ? (t.cost * 30) / t.every : 0), 0);
  $("status").textContent = monthly
    ? T.total + ": " + money(monthly) + " " + T.perMonth
    : list.length - dueNow + " / " + list.length + " " + T.upToDate;
  progress("progress-fill", list.length - dueNow, list.length || 1, false);
  const box = $("schedule");
  clear(box);
  list.forEach((t) => {
    const diff = daysBetween(today, t.due);
    const li = el("li", diff < 0 ? "item overdue" : diff === 0 ? "item due" : "item");
    const when = diff < 0 ? -diff + " " + T.days + " " + T.overdue : diff === 0 ? T.dueToday : T.inDays + " " + diff + " " + T.days;
    li.appendChild(el("span", "item-text", t.label + " · " + T.every + " " + t.every + " " + T.days + (t.cost ? " · " + money(t.cost) : "")));
    li.appendChild(el("span", "muted", when));
    li.appendChild(button(T.markDone, "", () => {
      last[t.id] = dayKey();
      save(last, ".last");
      render();
    }));
    if (t.own) {
      li.appendChild(deleteButton(() => {
        OWN.remove(t.id);
        delete last[t.id];
        save(last, ".last");
        render();
      }));
    }
    box.appendChild(li);
  });
}

function init() {
  onSubmit((v) => {
    if (!v.label || !(v.every > 0)) return false;
    OWN.add({ label: v.label, every: v.every, cost: v.cost || 0 });
    render();
    return true;
  });
  render();
}

// Habit grid: tap a day to tick it, streaks per habit, daily completion chart.
const OWN = makeLog(".habits");
let marks = load(".marks", {});

function habits() {
  const base = CONFIG.habits.map((h) => ({ id: h[0], label: h[1], own: false }));
  return base.concat(OWN.items.map((h) => ({ id: h.id, label: h.label, own: true })));
}

function isDone(id, day) {
  return (marks[id] || []).indexOf(day) >= 0;
}

function toggleMark(id, day) {
  const list = marks[id] || [];
  marks[id] = isDone(id, day) ? list.filter((d) => d !== day) : list.concat([day]);
  save(marks, ".marks");
  render();
}

function streakOf(id) {
  let d = dayKey();
  if (!isDone(id, d)) d = addDays(d, -1);
  let n = 0;
  while (isDone(id, d)) {
    n += 1;
    d = addDays(d, -1);
  }
  return n;
}

function render() {
  const days = lastDays(CONFIG.chartDays);
  const today = dayKey();
  const list = habits();
  const doneToday = list.filter((h) => isDone(h.id, today)).length;
  $("today-total").textContent = T.today + ": " + doneToday + " / " + list.length;
  progress("progress-fill", doneToday, list.length || 1, false);
  $("status").textContent = T.streak + ": " + list.reduce((m, h) => Math.max(m, streakOf(h.id)), 0) + " " + T.days;
  const grid = $("grid");
  clear(grid);
  const head = el("tr");
  head.appendChild(el("th", "", ""));
  days.forEach((d) => head.appendChild(el("th", "day", d.slice(8))));
  head.appendChild(el("th", "", "🔥"));
  grid.appendChild(head);
  list.forEach((h) => {
    const row = el("tr");
    const name = el("th", "habit", h.label);
    if (h.own) {
      name.appendChild(deleteButton(() => {
        OWN.remove(h.id);
        delete marks[h.id];
        save(marks, ".marks");
        render();
      }));
    }
    row.appendChild(name);
    days.forEach((d) => {
      const cell = el("td");
      const on = isDone(h.id, d);
      cell.appendChild(button(on ? "✓" : "·", on ? "cell on" : "cell", () => toggleMark(h.id, d)));
      row.appendChild(cell);
    });
    row.appendChild(el("td", "streak", String(streakOf(h.id))));
    grid.appendChild(row);
  });
  barChart($("chart"), days.map(shortDay), days.map((d) => list.filter((h) => isDone(h.id, d)).length), list.length);
}

function init() {
  onSubmit((v) => {
    if (!v.label) return false;
    OWN.add({ label: v.label });
    render();
    return true;
  });
  render();
}

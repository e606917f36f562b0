// Today's medicine/vitamin schedule: tick doses, late ones turn red, 7-day adherence.
const TAKEN = makeLog();
const OWN = makeLog(".meds");

function meds() {
  return CONFIG.meds.concat(OWN.items.map((m) => ({ id: m.id, name: m.name, who: m.who, times: m.times })));
}

function minutesOf(hhmm) {
  const p = String(hhmm).split(":").map(Number);
  return p[0] * 60 + (p[1] || 0);
}

function render() {
  const today = dayKey();
  const now = new Date();
  const nowMin = now.getHours() * 60 + now.getMinutes();
  const slots = [];
  meds().forEach((m) => m.times.forEach((t) => slots.push({ med: m, time: t })));
  slots.sort((a, b) => minutesOf(a.time) - minutesOf(b.time));
  const box = $("schedule");
  clear(box);
  let takenToday = 0;
  slots.forEach((s) => {
    const hit = TAKEN.items.find((t) => t.med === s.med.id && t.time === s.time && t.day === today);
    const late = !hit && nowMin > minutesOf(s.time) + CONFIG.graceMinutes;
    const li = el("li", hit ? "item done" : late ? "item overdue" : "item");
    li.appendChild(el("span", "item-text", s.time + " · " + s.med.name + (s.med.who ? " (" + s.med.who + ")" : "")));
    if (hit) {
      takenToday += 1;
      li.appendChild(el("span", "muted", T.taken + " " + clock(hit.at)));
      li.appendChild(button("↺", "del", () => {
        TAKEN.remove(hit.id);
        render();
      }));
    } else {
      li.appendChild(button(T.take, "", () => {
        TAKEN.add({ med: s.med.id, time: s.time });
        render();
      }));
    }
    box.appendChild(li);
  });
  $("today-total").textContent = T.today + ": " + takenToday + " / " + slots.length;
  progress("progress-fill", takenToday, slots.length || 1, false);
  const days = lastDays(7);
  const expected = slots.length * days.length;
  const got = TAKEN.items.filter((t) => t.day >= days[0]).length;
  $("status").textContent = T.adherence + ": " + (expected ? Math.round((100 * Math.min(got, expected)) / expected) : 0) + "%";
  renderList($("list"), OWN.items, (m) => m.name + (m.who ? " (" + m.who + ")" : "") + " · " + m.times.join(", "), (m) => {
    OWN.remove(m.id);
    render();
  });
  barChart($("chart"), days.map(shortDay), TAKEN.sumByDay(days, () => 1), slots.length);
}

function init() {
  onSubmit((v) => {
    const times = String(v.times || "").split(/[ ,;]+/).filter((t) => /^\d{1,2}:\d{2}$/.test(t));
    if (!v.name || !times.length) return false;
    OWN.add({ name: v.name, who: v.who, times: times });
    render();
    return true;
  });
  render();
}

// Sectioned checklist with due dates counted from a target day (move, due date, trip).
const CUSTOM = makeLog(".custom");
let done = load(".done", {});

function targetDate() {
  return load(".target", "") || "";
}

function allItems() {
  const out = [];
  CONFIG.sections.forEach((sec, si) => {
    sec.items.forEach((it, ii) => out.push({ id: "s" + si + "i" + ii, section: si, text: it[0], offset: it[1], custom: false }));
  });
  CUSTOM.items.forEach((c) => out.push({ id: c.id, section: num(c.section), text: c.text, offset: num(c.offset), custom: true }));
  return out;
}

function dueInfo(item) {
  const target = targetDate();
  if (!target) return { text: "", late: false };
  const due = addDays(target, item.offset);
  const diff = daysBetween(dayKey(), due);
  if (done[item.id]) return { text: due, late: false };
  if (diff < 0) return { text: due + " · " + T.overdue, late: true };
  if (diff === 0) return { text: T.dueToday, late: false };
  return { text: due + " · " + T.inDays + " " + diff + " " + T.days, late: false };
}

function render() {
  const items = allItems();
  const finished = items.filter((i) => done[i.id]).length;
  $("today-total").textContent = T.progressLabel + ": " + finished + " / " + items.length;
  progress("progress-fill", finished, items.length || 1, false);
  const target = targetDate();
  $("status").textContent = CONFIG.targetLabel + ": " + (target ? target + " (" + T.inDays + " " + daysBetween(dayKey(), target) + " " + T.days + ")" : "?");
  const box = $("sections");
  clear(box);
  CONFIG.sections.forEach((sec, si) => {
    const mine = items.filter((i) => i.section === si);
    box.appendChild(el("h3", "", sec.title + " (" + mine.filter((i) => done[i.id]).length + "/" + mine.length + ")"));
    const list = el("ul", "list");
    mine.forEach((item) => {
      const info = dueInfo(item);
      const li = el("li", done[item.id] ? "item done" : info.late ? "item overdue" : "item");
      const check = el("input");
      check.type = "checkbox";
      check.checked = Boolean(done[item.id]);
      check.addEventListener("change", () => {
        done[item.id] = check.checked;
        save(done, ".done");
        render();
      });
      li.appendChild(check);
      li.appendChild(el("span", "item-text", item.text));
      if (info.text) li.appendChild(el("span", "muted", info.text));
      if (item.custom) {
        li.appendChild(deleteButton(() => {
          CUSTOM.remove(item.id);
          render();
        }));
      }
      list.appendChild(li);
    });
    box.appendChild(list);
  });
}

function init() {
  const picker = $("target-date");
  picker.value = targetDate();
  picker.addEventListener("change", () => {
    save(picker.value, ".target");
    render();
  });
  const sel = $("f-section");
  CONFIG.sections.forEach((sec, si) => {
    const o = el("option", "", sec.title);
    o.value = String(si);
    sel.appendChild(o);
  });
  onSubmit((v) => {
    if (!v.text) return false;
    CUSTOM.add({ text: v.text, section: num(v.section), offset: num(v.offset) });
    render();
    return true;
  });
  render();
}

// Leitner-box flashcards: right answers move a card to a longer interval.
const OWN = makeLog(".cards");
let state = load(".state", {});
let current = null;
let revealed = false;

function cards() {
  const base = CONFIG.cards.map((c) => ({ id: c[0], front: c[0], back: c[1] }));
  const all = base.concat(OWN.items.map((c) => ({ id: c.id, front: c.front, back: c.back })));
  return CONFIG.reverse ? all.map((c) => ({ id: c.id, front: c.back, back: c.front })) : all;
}

function boxOf(card) {
  return Math.min(CONFIG.intervals.length - 1, (state[card.id] || { box: 0 }).box);
}

function dueCards() {
  const today = dayKey();
  return cards().filter((c) => !state[c.id] || state[c.id].due <= today);
}

function next() {
  const due = dueCards();
  current = due.length ? due[Math.floor(Math.random() * due.length)] : null;
  revealed = false;
  render();
}

function answer(ok) {
  if (!current) return;
  const box = ok ? Math.min(CONFIG.intervals.length - 1, boxOf(current) + 1) : 0;
  state[current.id] = { box: box, due: addDays(dayKey(), CONFIG.intervals[box]) };
  save(state, ".state");
  next();
}

function render() {
  $("today-total").textContent = T.dueCards + ": " + dueCards().length + " / " + cards().length;
  $("card-front").textContent = current ? current.front : T.allDone;
  $("card-back").textContent = current && revealed ? current.back : "";
  $("reveal").hidden = !current || revealed;
  $("got").hidden = !current || !revealed;
  $("missed").hidden = !current || !revealed;
  const counts = CONFIG.intervals.map(() => 0);
  cards().forEach((c) => {
    counts[boxOf(c)] += 1;
  });
  cssBars($("groups"), counts.map((n, i) => ({ label: T.boxes + " " + (i + 1) + " · " + CONFIG.intervals[i] + " " + T.days, value: n })), "");
  renderList($("list"), OWN.items, (c) => c.front + " → " + c.back, (c) => {
    OWN.remove(c.id);
    delete state[c.id];
    save(state, ".state");
    next();
  });
}

function init() {
  $("reveal").addEventListener("click", () => {
    revealed = true;
    render();
  });
  $("got").addEventListener("click", () => answer(true));
  $("missed").addEventListener("click", () => answer(false));
  onSubmit((v) => {
    if (!v.front || !v.back) return false;
    OWN.add({ front: v.front, back: v.back });
    next();
    return true;
  });
  next();
}

// Shared expenses between people, balances and the fewest transfers to settle up.
const LOG = makeLog();
let people = load(".people", null) || CONFIG.people.slice();

function paintPayers() {
  const select = $("f-payer");
  const keep = select.value;
  clear(select);
  people.forEach((p) => {
    const o = el("option", "", p);
    o.value = p;
    select.appendChild(o);
  });
  if (people.indexOf(keep) >= 0) select.value = keep;
}

function balances() {
  const bal = {};
  people.forEach((p) => {
    bal[p] = 0;
  });
  LOG.items.forEach((e) => {
    const among = e.among && e.among.length ? e.among : people;
    const share = num(e.amount) / among.length;
    bal[e.payer] = (bal[e.payer] || 0) + num(e.amount);
    among.forEach((p) => {
      bal[p] = (bal[p] || 0) - share;
    });
  });
  return bal;
}

function settle(bal) {
  const debt = Object.keys(bal).filter((p) => bal[p] < -0.005).map((p) => [p, -bal[p]]);
  const cred = Object.keys(bal).filter((p) => bal[p] > 0.005).map((p) => [p, bal[p]]);
  debt.sort((a, b) => b[1] - a[1]);
  cred.sort((a, b) => b[1] - a[1]);
  const moves = [];
  let i = 0;
  let j = 0;
  while (i < debt.length && j < cred.length) {
    const amt = Math.min(debt[i][1], cred[j][1]);
    moves.push(debt[i][0] + " " + T.pays + " " + cred[j][0] + " " + money(amt));
    debt[i][1] -= amt;
    cred[j][1] -= amt;
    if (debt[i][1] < 0.005) i += 1;
    if (cred[j][1] < 0.005) j += 1;
  }
  return moves;
}

function render() {
  paintPayers();
  const total = LOG.items.reduce((s, e) => s + num(e.amount), 0);
  $("today-total").textContent = T.total + ": " + money(total);
  $("status").textContent = T.perPerson + ": " + money(people.length ? total / people.length : 0);
  const bal = balances();
  const box = $("groups");
  clear(box);
  people.forEach((p) => box.appendChild(el("div", bal[p] < 0 ? "bar-row warn" : "bar-row", p + ": " + money(bal[p]))));
  const out = $("settle");
  clear(out);
  const moves = settle(bal);
  (moves.length ? moves : [T.allSettled]).forEach((m) => out.appendChild(el("li", "item", m)));
  renderList($("list"), LOG.items, (e) => withExtra(shortDay(e.day) + " · " + (e.what || "?") + " · " + money(e.amount) + " · " + e.payer, e), (e) => {
    LOG.remove(e.id);
    render();
  });
}

function init() {
  onSubmit((v) => {
    if (!(v.amount > 0) || !v.payer) return false;
    LOG.add(Object.assign(v, { among: people.slice() }));
    render();
    return true;
  });
  onSubmit(() => {
    const input = $("person-name");
    const name = String(input.value || "").trim();
    if (name && people.indexOf(name) < 0) {
      people.push(name);
      save(people, ".people");
    }
    input.value = "";
    render();
    return false;
  }, "person-form");
  render();
}

FEATURES.push(function holidays() {
  // Upcoming public holidays (school's out, plan around them).
  const cfg = CONFIG.features.holidays;
  const list = $("holidays");
  const year = new Date().getFullYear();
  fetch("https://date.nager.at/api/v3/PublicHolidays/" + year + "/" + cfg.country)
    .then((r) => r.json())
    .then((days) => {
      clear(list);
      days.filter((d) => d.date >= dayKey()).slice(0, cfg.show).forEach((d) => {
        list.appendChild(el("li", "item", d.date + " · " + d.localName));
      });
    })
    .catch(() => {
      list.appendChild(el("li", "empty", offlineText()));
    });
});

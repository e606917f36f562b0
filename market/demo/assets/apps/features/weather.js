FEATURES.push(function weather() {
  // Current conditions for the saved city; the only network call this app makes.
  const cfg = CONFIG.features.weather;
  const box = $("weather");
  const url = "https://api.open-meteo.com/v1/forecast?latitude=" + cfg.lat + "&longitude=" + cfg.lon +
    "&current=temperature_2m,precipitation&temperature_unit=" + cfg.tempUnit + "&timezone=auto";
  fetch(url)
    .then((r) => r.json())
    .then((data) => {
      const c = data.current || {};
      box.textContent = T.weather + " · " + cfg.city + ": " + fmt(c.temperature_2m) + "°" + (cfg.tempUnit === "fahrenheit" ? "F" : "C") + " · " + fmt(c.precipitation) + " mm";
    })
    .catch(() => {
      box.textContent = T.weather + " · " + cfg.city + ": " + offlineText();
    });
});

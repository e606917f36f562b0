FEATURES.push(function csvExport() {
  // Exports the main log as CSV via a data: URL (no upload, nothing leaves the device).
  $("export-csv").addEventListener("click", () => {
    const cols = ["day"].concat(CONFIG.fields.map((f) => f.name));
    const cell = (v) => '"' + String(v === undefined ? "" : v).replace(/"/g, '""') + '"';
    const rows = LOG.items.map((i) => cols.map((c) => cell(i[c])).join(","));
    const a = document.createElement("a");
    a.href = "data:text/csv;charset=utf-8," + encodeURIComponent([cols.join(",")].concat(rows).join("\n"));
    a.download = CONFIG.storeKey.replace(/[^a-z0-9]+/gi, "-") + ".csv";
    document.body.appendChild(a);
    a.click();
    a.remove();
  });
});

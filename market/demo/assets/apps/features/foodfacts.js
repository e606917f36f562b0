FEATURES.push(function foodfacts() {
  // Barcode -> product name, so adding groceries is one scan/type away.
  const input = $("barcode");
  const target = $("f-name");
  $("lookup").addEventListener("click", () => {
    const code = String(input.value || "").replace(/[^0-9]/g, "");
    if (!code) return;
    fetch("https://world.openfoodfacts.org/api/v2/product/" + code + ".json?fields=product_name")
      .then((r) => r.json())
      .then((data) => {
        if (data.product && data.product.product_name) target.value = data.product.product_name;
      })
      .catch(() => {
        input.value = "";
        input.placeholder = offlineText();
      });
  });
});

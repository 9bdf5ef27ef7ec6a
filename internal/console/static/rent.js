// gpurent console, rent form: the live cost estimate. When the GPU type,
// count, plan or duration changes, it asks /rent/estimate (the billing
// service's quote) and puts the figures in place. Without JavaScript the
// form's "estimate" button does the same with a page load.
(function () {
  "use strict";
  var form = document.getElementById("rent-form");
  var box = document.getElementById("estimate");
  if (!form || !box) return;
  var err = document.getElementById("est-error");
  var timer = null, seq = 0;
  function update() {
    var q = new URLSearchParams();
    ["gpu", "count", "plan", "hours"].forEach(function (n) { q.set(n, form.elements[n].value); });
    if (form.elements.degraded && form.elements.degraded.checked) q.set("degraded", "1");
    var mine = ++seq;
    fetch(box.getAttribute("data-estimate") + "?" + q.toString(), { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (v) {
        if (mine !== seq) return; // a newer request is on its way
        if (v.error) {
          err.textContent = v.error; err.hidden = false;
          box.setAttribute("data-state", "error");
          return;
        }
        err.hidden = true;
        Object.keys(v.set || {}).forEach(function (id) {
          var el = document.getElementById(id);
          if (el) el.textContent = v.set[id];
        });
        box.setAttribute("data-state", "ok");
        box.setAttribute("data-plan-fen", String(v.plan_fen));
      })
      .catch(function () { /* the page's estimate stays; the button still works */ });
  }
  function later() {
    if (timer) clearTimeout(timer);
    timer = setTimeout(update, 250);
  }
  ["rent-gpu", "rent-count", "rent-plan", "rent-hours", "rent-degraded"].forEach(function (id) {
    var el = document.getElementById(id);
    if (!el) return;
    el.addEventListener("input", later);
    el.addEventListener("change", later);
  });
})();

// gpurent console, rent-or-buy calculator: recomputes as the figures
// change, by asking /calculator.json (the same Go function the page is
// rendered with), and redraws the chart. Without JavaScript the form's
// button reloads the page with the answer.
(function () {
  "use strict";
  var form = document.getElementById("calc-form");
  if (!form) return;
  var answer = document.getElementById("calc-answer");
  var err = document.getElementById("calc-error");
  var chart = document.getElementById("calc-chart");
  var timer = null, seq = 0;
  function query() {
    var q = new URLSearchParams();
    Array.prototype.forEach.call(form.elements, function (el) {
      if (el.name) q.set(el.name, el.value);
    });
    return q;
  }
  function update() {
    var q = query();
    var mine = ++seq;
    fetch(form.getAttribute("data-json") + "?" + q.toString(), { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (v) {
        if (mine !== seq) return;
        // A new GPU type brings its own purchase figures.
        Object.keys(v.inputs || {}).forEach(function (name) {
          var el = form.elements[name];
          if (el && el !== document.activeElement && el.value !== v.inputs[name]) el.value = v.inputs[name];
        });
        var top = document.getElementById("form-error");
        if (top) top.hidden = true;
        if (v.error) {
          err.textContent = v.error; err.hidden = false;
          answer.hidden = true;
          return;
        }
        err.hidden = true; answer.hidden = false;
        Object.keys(v.set || {}).forEach(function (id) {
          var el = document.getElementById(id);
          if (el) el.textContent = v.set[id];
        });
        if (chart && v.chart && window.gpurentChart) {
          chart.setAttribute("data-chart", JSON.stringify(v.chart));
          window.gpurentChart(chart);
        }
        if (window.history && history.replaceState) {
          history.replaceState(null, "", form.getAttribute("action") + "?" + query().toString());
        }
      })
      .catch(function () { /* the button still works */ });
  }
  function later() {
    if (timer) clearTimeout(timer);
    timer = setTimeout(update, 300);
  }
  form.addEventListener("input", later);
  form.addEventListener("change", later);
})();

// gpurent console: progressive enhancement only; every page works without it.
(function () {
  "use strict";
  // Copy buttons: <button data-copy="text" data-copied="Copied">.
  document.addEventListener("click", function (e) {
    var b = e.target.closest("[data-copy]");
    if (!b) return;
    e.preventDefault();
    var text = b.getAttribute("data-copy");
    var done = function () {
      var old = b.textContent;
      b.textContent = b.getAttribute("data-copied") || "✓";
      b.setAttribute("data-done", "1");
      setTimeout(function () { b.textContent = old; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, done);
    } else {
      var t = document.createElement("textarea");
      t.value = text; document.body.appendChild(t); t.select();
      try { document.execCommand("copy"); } catch (err) { /* shown anyway */ }
      document.body.removeChild(t); done();
    }
  });
  // Confirmations: <form data-confirm="Delete?">.
  document.addEventListener("submit", function (e) {
    var f = e.target;
    var msg = f.getAttribute && f.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) e.preventDefault();
  });
  // Line charts: <svg class="chart" data-chart='{"labels":[..],"series":[{"name":"..","values":[..],"color":".."}],"max":100,"unit":"%"}'>.
  function drawChart(svg) {
    var d;
    try { d = JSON.parse(svg.getAttribute("data-chart")); } catch (err) { return; }
    var W = 600, H = 200, L = 40, B = 20, T = 10, R = 10;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var max = d.max || 0;
    (d.series || []).forEach(function (s) { (s.values || []).forEach(function (v) { if (v > max) max = v; }); });
    if (!(max > 0)) max = 1;
    var n = (d.labels || []).length;
    var ns = "http://www.w3.org/2000/svg";
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var axis = document.createElementNS(ns, "path");
    axis.setAttribute("d", "M" + L + " " + T + " V" + (H - B) + " H" + (W - R));
    axis.setAttribute("class", "axis"); axis.setAttribute("fill", "none"); svg.appendChild(axis);
    [0, 0.5, 1].forEach(function (f) {
      var t = document.createElementNS(ns, "text");
      t.setAttribute("x", 2); t.setAttribute("y", H - B - f * (H - B - T) + 3);
      t.textContent = (Math.round(max * f * 10) / 10) + (d.unit || ""); svg.appendChild(t);
    });
    if (n > 0) {
      [0, n - 1].forEach(function (i) {
        var t = document.createElementNS(ns, "text");
        t.setAttribute("x", L + (n === 1 ? 0 : i / (n - 1)) * (W - L - R) - (i ? 40 : 0)); t.setAttribute("y", H - 4);
        t.textContent = d.labels[i]; svg.appendChild(t);
      });
    }
    var palette = ["#1f5fbf", "#1d7a46", "#9a6700", "#b42318", "#6f42c1"];
    (d.series || []).forEach(function (s, k) {
      var pts = (s.values || []).map(function (v, i) {
        var x = L + (n <= 1 ? 0 : i / (n - 1)) * (W - L - R);
        var y = H - B - (v / max) * (H - B - T);
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      var p = document.createElementNS(ns, "polyline");
      p.setAttribute("points", pts.join(" ")); p.setAttribute("fill", "none");
      p.setAttribute("stroke", s.color || palette[k % palette.length]); p.setAttribute("stroke-width", "2");
      var title = document.createElementNS(ns, "title"); title.textContent = s.name || ""; p.appendChild(title);
      svg.appendChild(p);
    });
  }
  window.gpurentChart = drawChart;
  // Live updates: <div data-sse="/instances/i-x/events"> replaces the text
  // of elements whose id an event names: {"set": {"id": "text"}}; an event
  // {"reload": true} reloads the page.
  function listen(el) {
    if (!window.EventSource) return;
    var es = new EventSource(el.getAttribute("data-sse"));
    es.onmessage = function (e) {
      var m; try { m = JSON.parse(e.data); } catch (err) { return; }
      if (m.reload) { es.close(); window.location.reload(); return; }
      Object.keys(m.set || {}).forEach(function (id) {
        var t = document.getElementById(id); if (t) t.textContent = m.set[id];
      });
      Object.keys(m.chart || {}).forEach(function (id) {
        var t = document.getElementById(id);
        if (t) { t.setAttribute("data-chart", JSON.stringify(m.chart[id])); drawChart(t); }
      });
    };
  }
  document.querySelectorAll("svg.chart[data-chart]").forEach(drawChart);
  document.querySelectorAll("[data-sse]").forEach(listen);
})();

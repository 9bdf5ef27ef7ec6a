// gpurent console, GPU market: the zone latency test. Each zone's button
// fetches its probe endpoint once to open the connection, then times three
// fetches and shows the median in ms. A zone's own probe is usually at
// another origin: its answer is opaque to the page (no-cors), which is
// enough to time it.
(function () {
  "use strict";
  function once(url) {
    var t0 = performance.now();
    var cross = new URL(url, location.href).origin !== location.origin;
    // No cookies: the probe's answer should cost the server nothing.
    return fetch(url + (url.indexOf("?") < 0 ? "?" : "&") + "t=" + Date.now(),
      { cache: "no-store", credentials: "omit", mode: cross ? "no-cors" : "same-origin" }).then(function (r) {
      if (r.type !== "opaque" && !r.ok) throw new Error("probe answered " + r.status);
      return performance.now() - t0;
    });
  }
  function measure(button) {
    var out = document.getElementById(button.getAttribute("data-target"));
    var url = button.getAttribute("data-probe");
    var label = button.textContent;
    var times = [], warm = false;
    button.disabled = true;
    button.textContent = button.getAttribute("data-measuring");
    var next = function () {
      if (times.length === 3) {
        times.sort(function (a, b) { return a - b; });
        var ms = times[1];
        out.textContent = (ms < 10 ? ms.toFixed(1) : Math.round(ms)) + " " + out.getAttribute("data-unit");
        out.setAttribute("data-ms", ms.toFixed(2));
        button.disabled = false; button.textContent = label;
        return;
      }
      once(url).then(function (ms) { if (warm) { times.push(ms); } warm = true; next(); }, function () {
        out.textContent = button.getAttribute("data-failed");
        button.disabled = false; button.textContent = label;
      });
    };
    next();
  }
  document.querySelectorAll("button[data-probe]").forEach(function (b) {
    b.hidden = false;
    b.addEventListener("click", function (e) { e.preventDefault(); measure(b); });
  });
})();

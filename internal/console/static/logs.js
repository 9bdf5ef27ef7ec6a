// The instance page's logs panel: <pre id="logs" data-logs="/instances/i-x/logs">
// shows the last lines of the startup command's output, fetched now and
// every 5 s while the page is visible; an error answer (the host cannot
// serve logs, the instance stopped) stops the polling until Refresh.
(function () {
  "use strict";
  var pre = document.getElementById("logs");
  if (!pre || !window.fetch) return;
  var url = pre.getAttribute("data-logs");
  var busy = false, timer = null;
  function poll() {
    if (timer === null) timer = setInterval(function () { if (!document.hidden) load(); }, 5000);
  }
  function load() {
    if (busy) return;
    busy = true;
    fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      return r.text().then(function (t) {
        var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.textContent = t === "" ? pre.getAttribute("data-empty") : t;
        pre.classList.toggle("bad", !r.ok);
        if (atEnd) pre.scrollTop = pre.scrollHeight;
        if (!r.ok && timer !== null) { clearInterval(timer); timer = null; }
      });
    }).catch(function () {}).then(function () { busy = false; });
  }
  var btn = document.getElementById("logs-refresh");
  if (btn) btn.addEventListener("click", function () { load(); poll(); });
  load();
  poll();
})();

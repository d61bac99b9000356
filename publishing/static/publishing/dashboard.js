// The publishing dashboard refreshes its live part every few seconds: it fetches the
// fragment the server renders (?fragment=1) and swaps it in, with no full reload.
// Paused while the tab is hidden; a failed fetch is shown and retried at the next tick.
(function () {
  "use strict";
  var root = document.getElementById("bp-dashboard");
  if (!root) { return; }
  var url = root.getAttribute("data-refresh-url");
  var seconds = parseInt(root.getAttribute("data-refresh-seconds"), 10) || 5;
  var stamp = document.getElementById("bp-refreshed");
  var busy = false;

  function refresh() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) {
        if (response.redirected || !response.ok) {
          throw new Error(response.redirected ? "logged out" : "HTTP " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        root.innerHTML = html;
        if (stamp) { stamp.textContent = "refreshed " + new Date().toISOString().slice(11, 19) + " UTC"; }
        root.setAttribute("data-refreshes", String((parseInt(root.getAttribute("data-refreshes"), 10) || 0) + 1));
      })
      .catch(function (error) {
        if (stamp) { stamp.textContent = "refresh failed (" + error.message + "), retrying"; }
      })
      .then(function () { busy = false; });
  }

  window.setInterval(refresh, seconds * 1000);
})();

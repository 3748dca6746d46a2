/* simulator view: the little the app's pages do in the browser. No data is read from the page but attributes
   the server wrote escaped; no text is ever inserted as HTML. */
(function () {
  "use strict";

  // Buttons that change a run ask first.
  document.querySelectorAll("button[data-confirm]").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!window.confirm(button.getAttribute("data-confirm"))) {
        event.preventDefault();
      }
    });
  });

  // A run's page links each case to its own conversation page.
  var dataNode = document.getElementById("simulator-report-data");
  if (dataNode) {
    var data = JSON.parse(dataNode.textContent || "{}");
    (data.cases || []).forEach(function (info) {
      var card = document.getElementById(info.id);
      var summary = card && card.querySelector("summary");
      if (!summary || !info.key) {
        return;
      }
      var link = document.createElement("a");
      link.className = "open-conversation";
      link.href = "/runs/" + encodeURIComponent(data.run) + "/conversation?key=" + encodeURIComponent(info.key);
      link.textContent = "open";
      summary.appendChild(link);
    });
  }

  // A running run's page follows it: its status is polled, and the page reloads when a result is stored or
  // the run ends.
  var live = document.querySelector(".live[data-run]");
  if (live) {
    var run = live.getAttribute("data-run");
    var stored = live.getAttribute("data-stored");
    var status = live.getAttribute("data-status");
    var poll = function () {
      fetch("/api/runs/" + encodeURIComponent(run) + "/status", { credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (state) {
          if (!state) {
            return;
          }
          if (String(state.stored) !== stored || state.status !== status) {
            window.location.reload();
            return;
          }
          window.setTimeout(poll, 2000);
        })
        .catch(function () { window.setTimeout(poll, 5000); });
    };
    window.setTimeout(poll, 2000);
  }
})();

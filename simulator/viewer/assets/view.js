/* simulator view: the little the app's pages do in the browser. No data is read from the page but attributes
   the server wrote escaped; the only HTML ever put in a page is the app's own (escaped by the server, as every
   page is), parsed inert by DOMParser: a case's detail, loaded when its card is opened, and a running run's
   newer page. */
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

  // A run's page links each case to its own conversation page, and loads a case's conversation when opened.
  function setUpRunPage() {
    var dataNode = document.getElementById("simulator-report-data");
    if (!dataNode) {
      return;
    }
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
      var review = document.createElement("a");
      review.className = "open-conversation review-conversation";
      review.href = link.href + "#review";
      review.textContent = "review";
      summary.appendChild(review);
      loadWhenOpened(data.run, info, card);
    });
  }

  // A run's page holds a closed case as its summary line alone, an open one without its transcript, world and
  // scores: the rest is loaded into the card the first time it is opened (a card that starts open, at once).
  function loadWhenOpened(run, info, card) {
    var slot = card.querySelector(".case-detail[data-pending]");
    if (!slot) {
      return;
    }
    var address = "/runs/" + encodeURIComponent(run) + "/conversation?part=" +
      encodeURIComponent(slot.getAttribute("data-pending")) + "&key=" + encodeURIComponent(info.key) +
      "&n=" + encodeURIComponent(info.id.replace(/^case-/, ""));
    var part = slot.getAttribute("data-pending");
    var load = function () {
      if (!card.open || !slot.hasAttribute("data-pending")) {
        return;
      }
      slot.removeAttribute("data-pending");
      slot.setAttribute("aria-busy", "true");
      fetch(address, { credentials: "same-origin" })
        .then(function (response) { return response.text(); })
        .then(function (text) {
          var parsed = new DOMParser().parseFromString(text, "text/html");
          slot.replaceChildren.apply(slot, Array.prototype.slice.call(parsed.body.childNodes));
          slot.removeAttribute("aria-busy");
          slot.setAttribute("data-loaded", "1");
        })
        .catch(function () {
          slot.setAttribute("data-pending", part);
          slot.removeAttribute("aria-busy");
          slot.textContent = "Not loaded: the app cannot be reached. Close and open the case to try again.";
        });
    };
    card.addEventListener("toggle", load);
    load();
  }

  // Review forms: the reviewer's name is remembered in this browser (localStorage; no cookie), the review is
  // sent as JSON and the page reloads to show it beside the judge's verdict; a refusal shows the API's message.
  var NAME_KEY = "simulator-view-reviewer";
  var remembered = "";
  try {
    remembered = window.localStorage.getItem(NAME_KEY) || "";
  } catch (error) {
    remembered = "";
  }
  document.querySelectorAll("form.review-form").forEach(function (form) {
    var reviewer = form.querySelector("input[name=reviewer]");
    var said = form.querySelector("output.review-error");
    if (reviewer && remembered && !reviewer.value) {
      reviewer.value = remembered;
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var fields = {};
      ["key", "target", "verdict", "reason", "reviewer"].forEach(function (name) {
        var chosen = form.querySelector("[name=" + name + "]:checked") || form.querySelector("[name=" + name + "]");
        var isChoice = chosen && chosen.type === "radio";
        fields[name] = chosen && (!isChoice || chosen.checked) ? chosen.value : "";
      });
      try {
        window.localStorage.setItem(NAME_KEY, fields.reviewer);
      } catch (error) {
        // A browser without storage still records the review; it only forgets the name.
      }
      said.textContent = "Saving…";
      fetch(form.getAttribute("action"), {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(fields)
      })
        .then(function (response) {
          if (response.ok) {
            window.location.hash = form.id;
            window.location.reload();
            return null;
          }
          return response.json().then(
            function (answer) { said.textContent = answer.error || "Not saved (" + response.status + ")"; },
            function () { said.textContent = "Not saved (" + response.status + ")"; }
          );
        })
        .catch(function () { said.textContent = "Not saved: the app cannot be reached."; });
    });
  });

  // A running run's page follows it: its status is polled, and when a result is stored or the run ends the
  // page's content is swapped for the newer page's (no reload: the filters, the cases opened and the scroll
  // position stay).
  function openKeys() {
    var keys = {};
    var dataNode = document.getElementById("simulator-report-data");
    var data = dataNode ? JSON.parse(dataNode.textContent || "{}") : {};
    (data.cases || []).forEach(function (info) {
      var card = document.getElementById(info.id);
      if (card) {
        keys[info.key] = card.open;
      }
    });
    return keys;
  }

  function swapIn(text) {
    var parsed = new DOMParser().parseFromString(text, "text/html");
    var fresh = parsed.querySelector("main");
    var main = document.querySelector("main");
    if (!fresh || !main) {
      return false;
    }
    var wasOpen = openKeys();
    main.replaceChildren.apply(main, Array.prototype.slice.call(fresh.childNodes));
    document.title = parsed.title;
    var dataNode = document.getElementById("simulator-report-data");
    var data = dataNode ? JSON.parse(dataNode.textContent || "{}") : {};
    (data.cases || []).forEach(function (info) {
      var card = document.getElementById(info.id);
      if (card && Object.prototype.hasOwnProperty.call(wasOpen, info.key)) {
        card.open = wasOpen[info.key];
      }
    });
    if (window.simulatorReport) {
      window.simulatorReport.start(true);
    }
    setUpRunPage();
    follow();
    return true;
  }

  function follow() {
    var live = document.querySelector(".live[data-run]");
    if (!live) {
      return;
    }
    var run = live.getAttribute("data-run");
    var stored = live.getAttribute("data-stored");
    var status = live.getAttribute("data-status");
    var poll = function () {
      fetch("/api/runs/" + encodeURIComponent(run) + "/status", { credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (state) {
          if (!state) {
            return null;
          }
          if (String(state.stored) === stored && state.status === status) {
            window.setTimeout(poll, 2000);
            return null;
          }
          return fetch(window.location.pathname + window.location.search, { credentials: "same-origin" })
            .then(function (response) { return response.ok ? response.text() : null; })
            .then(function (text) {
              if (!text || !swapIn(text)) {
                window.setTimeout(poll, 2000);
              }
            });
        })
        .catch(function () { window.setTimeout(poll, 5000); });
    };
    window.setTimeout(poll, 2000);
  }

  setUpRunPage();
  follow();
})();

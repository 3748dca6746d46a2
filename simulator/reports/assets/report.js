/* Simulator HTML report: client-side filters. Embedded inline by simulator/reports/html.py.
 * Without JavaScript the page is complete: every case is a <details> element and the filter bar stays hidden.
 * Filters: outcome checkboxes, tag / persona / suite / kind selects and a search box. The filter state is kept
 * in the address's fragment as "#?outcome=fail,error&tag=...&persona=...&suite=...&kind=...&q=..." so a
 * filtered view can be bookmarked; any other fragment (e.g. "#case-12") is a plain link to a case and opens it.
 * A page whose cards load their conversations when opened (its data says "lazy": true; simulator view serves
 * such pages) cannot search them here: its text search asks the page's own address + "/search?q=..." for the
 * keys of the results that match, and shows the local matches until the answer comes.
 */
(function () {
  "use strict";
  var NO_PERSONA = "-";
  var root = document.documentElement;
  var onHash = null;

  // Binds the filters to the page's cases; run again (window.simulatorReport.start(true)) after a front end puts
  // a newer copy of the page in place: the filter state lives in the address, so it carries over, and the page
  // is not scrolled again to the case the address names.
  function start(refreshed) {
    onHash = null;
    var dataNode = document.getElementById("simulator-report-data");
    var form = document.getElementById("filters");
    if (!dataNode || !form) { return; }
    var data = JSON.parse(dataNode.textContent || "{}");
    var entries = [];
    (data.cases || []).forEach(function (info) {
      var el = document.getElementById(info.id);
      if (el) { entries.push({ info: info, el: el, text: el.textContent.toLowerCase() }); }
    });
    var groups = Array.prototype.slice.call(document.querySelectorAll("[data-group]"));
    var shown = document.getElementById("shown");
    var outcomeBoxes = Array.prototype.slice.call(form.querySelectorAll("input[name=outcome]"));
    var tagSelect = form.elements.namedItem("tag");
    var personaSelect = form.elements.namedItem("persona");
    var suiteSelect = form.elements.namedItem("suite");
    var kindSelect = form.elements.namedItem("kind");
    var search = form.elements.namedItem("q");

    function readState() {
      var outcomes = {};
      outcomeBoxes.forEach(function (box) { if (box.checked) { outcomes[box.value] = true; } });
      return {
        outcomes: outcomes,
        tag: tagSelect ? tagSelect.value : "",
        persona: personaSelect ? personaSelect.value : "",
        suite: suiteSelect ? suiteSelect.value : "",
        kind: kindSelect ? kindSelect.value : "",
        q: search ? search.value.trim().toLowerCase() : ""
      };
    }

    function matches(entry, state) {
      var info = entry.info;
      if (!state.outcomes[info.outcome]) { return false; }
      if (state.tag && (info.tags || []).indexOf(state.tag) < 0) { return false; }
      if (state.persona) {
        var persona = info.persona === null || info.persona === undefined ? NO_PERSONA : info.persona;
        if (persona !== state.persona) { return false; }
      }
      if (state.suite && String(info.suite) !== state.suite) { return false; }
      if (state.kind && info.kind !== state.kind) { return false; }
      if (state.q && lazy && remote.q === state.q) {
        return remote.keys[info.key] === true;
      }
      if (state.q) {
        var words = state.q.split(/\s+/);
        for (var i = 0; i < words.length; i += 1) {
          if (words[i] && entry.text.indexOf(words[i]) < 0) { return false; }
        }
      }
      return true;
    }

    var lazy = data.lazy === true;
    var remote = { q: null, keys: {}, asked: null, timer: null };

    function askServer(q) {
      if (!lazy || !q || remote.asked === q) { return; }
      remote.asked = q;
      window.clearTimeout(remote.timer);
      remote.timer = window.setTimeout(function () {
        var address = location.pathname.replace(/\/+$/, "") + "/search?q=" + encodeURIComponent(q);
        fetch(address, { credentials: "same-origin" })
          .then(function (response) { return response.ok ? response.json() : null; })
          .then(function (answer) {
            if (!answer || remote.asked !== q) { return; }
            remote.q = q;
            remote.keys = {};
            (answer.keys || []).forEach(function (key) { remote.keys[key] = true; });
            apply(false);
          })
          .catch(function () { remote.asked = null; });
      }, 150);
    }

    function writeHash(state) {
      var params = new URLSearchParams();
      var all = outcomeBoxes.every(function (box) { return box.checked; });
      if (!all) {
        params.set("outcome", outcomeBoxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; }).join(","));
      }
      if (state.tag) { params.set("tag", state.tag); }
      if (state.persona) { params.set("persona", state.persona); }
      if (state.suite) { params.set("suite", state.suite); }
      if (state.kind) { params.set("kind", state.kind); }
      if (search && search.value.trim()) { params.set("q", search.value.trim()); }
      var text = params.toString();
      var hash = text ? "#?" + text : "";
      if (hash === location.hash || (!hash && location.hash.indexOf("#?") !== 0)) { return; }
      try {
        history.replaceState(null, "", hash || location.pathname + location.search);
      } catch (ignored) { /* some browsers refuse on file: addresses; the filter still applies */ }
    }

    function apply(updateHash) {
      var state = readState();
      askServer(state.q);
      var visible = 0;
      entries.forEach(function (entry) {
        var show = matches(entry, state);
        entry.el.hidden = !show;
        if (show) { visible += 1; }
      });
      groups.forEach(function (group) {
        group.hidden = !group.querySelector("details.case:not([hidden])");
      });
      if (shown) { shown.textContent = "Showing " + visible + " of " + entries.length + " cases"; }
      if (updateHash) { writeHash(state); }
    }

    function setSelect(select, value) {
      if (!select || value === null) { return; }
      for (var i = 0; i < select.options.length; i += 1) {
        if (select.options[i].value === value) { select.value = value; return; }
      }
    }

    function readHash() {
      var hash = location.hash;
      if (hash.indexOf("#?") !== 0) { return false; }
      var params = new URLSearchParams(hash.slice(2));
      var outcome = params.get("outcome");
      if (outcome !== null) {
        var wanted = outcome.split(",");
        outcomeBoxes.forEach(function (box) { box.checked = wanted.indexOf(box.value) >= 0; });
      }
      setSelect(tagSelect, params.get("tag"));
      setSelect(personaSelect, params.get("persona"));
      setSelect(suiteSelect, params.get("suite"));
      setSelect(kindSelect, params.get("kind"));
      if (search && params.get("q") !== null) { search.value = params.get("q"); }
      return true;
    }

    function openTarget() {
      var id = location.hash.slice(1);
      if (!id || id.charAt(0) === "?") { return; }
      var target = document.getElementById(id);
      var node = target;
      while (node) {
        if (node.tagName === "DETAILS") { node.open = true; }
        if (node.hidden) { node.hidden = false; }
        node = node.parentElement;
      }
      if (target) { target.scrollIntoView(); }
    }

    function toggleAll(open) {
      entries.forEach(function (entry) { if (!entry.el.hidden) { entry.el.open = open; } });
    }

    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.addEventListener("input", function () { apply(true); });
    form.addEventListener("change", function () { apply(true); });
    form.addEventListener("click", function (event) {
      var action = event.target && event.target.getAttribute ? event.target.getAttribute("data-action") : null;
      if (action === "expand") { toggleAll(true); }
      if (action === "collapse") { toggleAll(false); }
      if (action === "reset") {
        outcomeBoxes.forEach(function (box) { box.checked = true; });
        [tagSelect, personaSelect, suiteSelect, kindSelect].forEach(function (s) { if (s) { s.value = ""; } });
        if (search) { search.value = ""; }
        apply(true);
      }
    });
    onHash = function () {
      if (readHash()) { apply(false); } else { openTarget(); }
    };

    readHash();
    form.hidden = false;
    apply(false);
    if (!refreshed) { openTarget(); }
    root.setAttribute("data-report-ready", String(entries.length));
  }

  window.addEventListener("hashchange", function () { if (onHash) { onHash(); } });
  window.simulatorReport = { start: start };
  start(false);
}());

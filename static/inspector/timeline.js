// The timeline's keys and toggles. Every key has a plain-link equivalent on the
// page (rows have anchors, findings are listed with links, pages load by
// scrolling), so nothing here is needed to read a transcript; it only makes
// reading one faster.
//
//   j / k   next / previous row        n / p   next / previous finding
//   /       the search box             ?       the list of keys
(function () {
  "use strict";
  var root = document.documentElement;
  var timeline = document.getElementById("timeline");
  if (!timeline) return;
  var keys = document.getElementById("keys");

  function store(name, value) {
    try { localStorage.setItem(name, value); } catch (error) { /* this page only */ }
  }

  // --- show or hide thinking and tool calls; the choice is kept (theme.js restores it) ---
  var toggles = document.querySelector("[data-show-toggles]");
  if (toggles) {
    toggles.hidden = false;
    Array.prototype.forEach.call(toggles.querySelectorAll("[data-hide]"), function (button) {
      var name = "hide-" + button.getAttribute("data-hide");
      button.setAttribute("aria-pressed", root.classList.contains(name) ? "false" : "true");
      button.addEventListener("click", function () {
        var hidden = root.classList.toggle(name);
        button.setAttribute("aria-pressed", hidden ? "false" : "true");
        store("inspector-" + name, hidden ? "1" : "0");
      });
    });
  }

  // --- narrow screens: findings, downloads and filters folded, so the rows come first ---
  var narrow = window.matchMedia ? window.matchMedia("(max-width: 860px)") : null;
  if (narrow) {
    var fold = function () {
      Array.prototype.forEach.call(document.querySelectorAll("details.fold-narrow"), function (d) {
        d.open = !narrow.matches;
      });
    };
    fold();
    if (narrow.addEventListener) narrow.addEventListener("change", fold);
  }

  // --- expand or fold every block of the loaded rows at once (outputs, thinking, arguments) ---
  var foldAll = document.querySelector("[data-fold-all]");
  if (foldAll) {
    foldAll.addEventListener("click", function () {
      var open = foldAll.getAttribute("data-fold-all") === "open";
      Array.prototype.forEach.call(timeline.querySelectorAll("details"), function (d) {
        d.open = open;
      });
      foldAll.setAttribute("data-fold-all", open ? "fold" : "open");
      foldAll.textContent = open ? "Fold all" : "Expand all";
    });
    // Rows loaded later come as they are drawn; the button says what it will do next.
    document.body.addEventListener("htmx:afterSettle", function () {
      if (foldAll.getAttribute("data-fold-all") === "fold") {
        Array.prototype.forEach.call(timeline.querySelectorAll("details"), function (d) { d.open = true; });
      }
    });
  }

  var opener = document.querySelector("[data-keys-open]");
  if (opener && keys && keys.showModal) {
    opener.hidden = false;
    opener.addEventListener("click", function () { keys.showModal(); });
  }

  // --- moving between rows ---
  function visibleRows(selector) {
    return Array.prototype.filter.call(timeline.querySelectorAll(selector), function (row) {
      return row.offsetParent !== null;
    });
  }

  function current() {
    var marked = timeline.querySelector("article.row.current");
    if (marked) return marked;
    if (location.hash) {
      var target = document.getElementById(location.hash.slice(1));
      if (target && timeline.contains(target)) return target;
    }
    return null;
  }

  function go(row) {
    var was = timeline.querySelector("article.row.current");
    if (was) was.classList.remove("current");
    row.classList.add("current");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "start" });
    if (history.replaceState) history.replaceState(null, "", "#" + row.id);
  }

  // The row after (step 1) or before (step -1) the current one among these;
  // with no current row, the first one below the top of the window.
  function neighbour(rows, step) {
    var here = current();
    if (here) {
      var all = visibleRows("article.row");
      var at = all.indexOf(here);
      var i;
      for (i = at + step; i >= 0 && i < all.length; i += step) {
        if (rows.indexOf(all[i]) !== -1) return all[i];
      }
      return null;
    }
    for (var k = 0; k < rows.length; k++) {
      if (rows[k].getBoundingClientRect().bottom > 0) {
        return step > 0 ? rows[k] : rows[Math.max(0, k - 1)];
      }
    }
    return null;
  }

  function number(key) {
    var match = /^r(\d+)$/.exec(key || "");
    return match ? parseInt(match[1], 10) : -1;
  }

  // A finding that is not loaded: the findings list links to its page.
  function unloadedFinding(step) {
    var here = current();
    var at = here ? number(here.id) : -1;
    var links = Array.prototype.slice.call(document.querySelectorAll(".findings a[href*='#r']"));
    var best = null;
    links.forEach(function (link) {
      var key = link.getAttribute("href").split("#")[1];
      var n = number(key);
      if (n < 0 || document.getElementById(key)) return;
      if (step > 0 && n > at && (best === null || n < best.n)) best = { n: n, link: link };
      if (step < 0 && n < at && (best === null || n > best.n)) best = { n: n, link: link };
    });
    return best && best.link;
  }

  function move(selector, step) {
    var rows = visibleRows(selector);
    var next = neighbour(rows, step);
    if (next) { go(next); return; }
    if (selector !== "article.row") {
      var link = unloadedFinding(step);
      if (link) { location.href = link.href; return; }
    }
    if (step > 0) {
      // Past the last loaded row: the next page comes in as the sentinel is reached.
      var sentinel = timeline.querySelector("a.sentinel");
      if (sentinel) sentinel.scrollIntoView({ block: "end" });
    } else {
      var earlier = timeline.querySelector("a.earlier");
      if (earlier && !current()) earlier.focus();
    }
  }

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (keys && keys.open && event.key !== "?") return;
    switch (event.key) {
      case "j": move("article.row", 1); break;
      case "k": move("article.row", -1); break;
      case "n": move("article.row.has-findings", 1); break;
      case "p": move("article.row.has-findings", -1); break;
      case "/": {
        var box = document.querySelector("[data-search-box]");
        if (!box) return;
        box.focus();
        box.select();
        break;
      }
      case "?":
        if (!keys || !keys.showModal) return;
        if (keys.open) keys.close(); else keys.showModal();
        break;
      default:
        return;
    }
    event.preventDefault();
  });

  // Pages that load as you scroll widen the map's frame of the rows shown.
  // (data-per-page: the marks one page of rows covers; a page is 200 rows.)
  var frame = document.querySelector("svg.map .m-window");
  if (frame) {
    var startWidth = parseFloat(frame.getAttribute("width"));
    var perRow = parseFloat(frame.getAttribute("data-per-page")) / 200;
    var startRows = timeline.querySelectorAll("article.row").length;
    document.body.addEventListener("htmx:afterSettle", function () {
      var loaded = timeline.querySelectorAll("article.row").length - startRows;
      frame.setAttribute("width", String(startWidth + loaded * perRow));
    });
  }

  // --- search: every row of the view, not only the loaded ones ---
  // Enter in the box goes to the next hit, Shift+Enter to the previous one; a hit
  // on a page not loaded opens that page, and the search goes on from there.
  var searchForm = document.querySelector("[data-search]");
  if (searchForm) {
    var box = searchForm.querySelector("[data-search-box]");
    var counter = searchForm.querySelector("[data-search-count]");
    var found = { query: null, hits: [], count: 0, at: -1 };

    // The words themselves, in each hit row: the text nodes are split around them and
    // the match put in a <mark> made here. No markup is ever built from a string, so
    // what a transcript says stays text whatever it holds.
    var unmarkWords = function () {
      Array.prototype.forEach.call(timeline.querySelectorAll("mark.hit-word"), function (mark) {
        var parent = mark.parentNode;
        parent.replaceChild(document.createTextNode(mark.textContent), mark);
        parent.normalize();
      });
    };

    var markWords = function (row, query) {
      var needle = query.toLowerCase();
      if (!needle || row.hasAttribute("data-marked")) return;
      row.setAttribute("data-marked", "");
      var body = row.querySelector(".body");
      if (!body) return;
      var walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
      var nodes = [];
      while (walker.nextNode()) nodes.push(walker.currentNode);
      nodes.forEach(function (node) {
        var text = node.nodeValue;
        var lower = text.toLowerCase();
        if (lower.length !== text.length) return; // a case change that moves characters
        var at = lower.indexOf(needle);
        if (at < 0) return;
        var pieces = document.createDocumentFragment();
        var from = 0;
        while (at >= 0) {
          pieces.appendChild(document.createTextNode(text.slice(from, at)));
          var mark = document.createElement("mark");
          mark.className = "hit-word";
          mark.textContent = text.slice(at, at + needle.length);
          pieces.appendChild(mark);
          from = at + needle.length;
          at = lower.indexOf(needle, from);
        }
        pieces.appendChild(document.createTextNode(text.slice(from)));
        node.parentNode.replaceChild(pieces, node);
      });
    };

    // A hit inside a folded block (a long output, thinking, arguments): opened, the
    // first marked word brought into view.
    var openHit = function (row) {
      var first = null;
      Array.prototype.forEach.call(row.querySelectorAll("mark.hit-word"), function (mark) {
        var inSummary = false;
        for (var up = mark.parentElement; up && up !== row; up = up.parentElement) {
          if (up.tagName === "SUMMARY") inSummary = true;
          if (up.tagName === "DETAILS" && !inSummary) up.open = true;
          if (up.tagName === "DETAILS") inSummary = false;
        }
        if (!first && mark.offsetParent !== null) first = mark;
      });
      return first;
    };

    var markHits = function () {
      Array.prototype.forEach.call(timeline.querySelectorAll(".search-hit"), function (row) {
        row.classList.remove("search-hit");
      });
      unmarkWords();
      Array.prototype.forEach.call(timeline.querySelectorAll("[data-marked]"), function (row) {
        row.removeAttribute("data-marked");
      });
      found.hits.forEach(function (hit) {
        var row = document.getElementById(hit.key);
        if (!row) return;
        row.classList.add("search-hit");
        markWords(row, found.query);
      });
    };

    var showCount = function () {
      if (!found.query) { counter.textContent = ""; return; }
      if (!found.count) { counter.textContent = "no row holds it"; return; }
      var more = found.count > found.hits.length ? " (the first " + found.hits.length + " can be stepped through)" : "";
      counter.textContent = (found.at >= 0 ? found.at + 1 + " of " : "") + found.count +
        " row" + (found.count === 1 ? "" : "s") + more;
    };

    var ask = function (then) {
      var query = box.value.trim();
      if (!query) { found = { query: null, hits: [], count: 0, at: -1 }; markHits(); showCount(); return; }
      var request = new XMLHttpRequest();
      request.open("GET", searchForm.action + "?" + new URLSearchParams(new FormData(searchForm)).toString());
      request.setRequestHeader("Accept", "application/json");
      request.addEventListener("load", function () {
        if (request.status !== 200) { counter.textContent = "This cannot be searched for."; return; }
        var answer = JSON.parse(request.responseText);
        found = { query: query, hits: answer.hits, count: answer.count, at: -1 };
        markHits();
        showCount();
        then();
      });
      counter.textContent = "searching…";
      request.send();
    };

    // The hit to start from: the first after the current row (or before it, going back).
    var firstFrom = function (step) {
      var here = current();
      if (!here) return step > 0 ? 0 : found.hits.length - 1;
      var rows = visibleRows("article.row");
      var at = rows.indexOf(here);
      var lastBefore = -1;
      var firstPage = parseInt(new URLSearchParams(location.search).get("page") || "1", 10);
      found.hits.forEach(function (hit, i) {
        var row = document.getElementById(hit.key);
        if (row ? rows.indexOf(row) !== -1 && rows.indexOf(row) <= at : hit.page < firstPage) {
          lastBefore = i;
        }
      });
      var count = found.hits.length;
      if (step > 0) return (lastBefore + 1) % count;
      var onHit = lastBefore >= 0 && found.hits[lastBefore].key === here.id;
      return ((onHit ? lastBefore - 1 : lastBefore) + count) % count;
    };

    var reveal = function (row) {
      Array.prototype.forEach.call(timeline.querySelectorAll(".search-current, .row.current"), function (r) {
        r.classList.remove("search-current");
        r.classList.remove("current");
      });
      row.classList.add("search-current");
      row.classList.add("current");
      var word = found.query ? openHit(row) : null;
      (word || row).scrollIntoView({ block: "center" });
      if (history.replaceState) history.replaceState(null, "", "#" + row.id);
    };

    var stepHits = function (step) {
      if (!found.hits.length) { showCount(); return; }
      found.at = found.at < 0 ? firstFrom(step) : (found.at + step + found.hits.length) % found.hits.length;
      var hit = found.hits[found.at];
      var row = document.getElementById(hit.key);
      if (row) { reveal(row); showCount(); return; }
      counter.textContent = "opening page " + hit.page + "…";
      location.href = hit.href;
    };

    var seek = function (step) {
      if (box.value.trim() !== found.query) ask(function () { stepHits(step); });
      else stepHits(step);
    };

    box.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { event.preventDefault(); seek(event.shiftKey ? -1 : 1); }
      if (event.key === "Escape") box.blur();
    });
    searchForm.addEventListener("submit", function (event) { event.preventDefault(); seek(1); });

    // Arrived at a hit on another page: the same search, from that hit.
    var asked = new URLSearchParams(location.search).get("q");
    if (asked) {
      box.value = asked;
      ask(function () {
        var key = location.hash.slice(1);
        found.hits.forEach(function (hit, i) { if (hit.key === key) found.at = i; });
        var row = document.getElementById(key);
        if (row) reveal(row);
        showCount();
      });
    }
    document.body.addEventListener("htmx:afterSettle", markHits);
  }

  // Clicking a row makes it the current one, so j/k go on from there.
  timeline.addEventListener("click", function (event) {
    var row = event.target.closest("article.row");
    if (!row) return;
    var was = timeline.querySelector("article.row.current");
    if (was) was.classList.remove("current");
    row.classList.add("current");
  });
})();

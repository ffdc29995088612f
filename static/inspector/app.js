// Every page: the theme toggle and copy buttons. Without JavaScript the theme
// follows the system setting and the values to copy stay selectable text.
(function () {
  "use strict";
  var root = document.documentElement;

  function store(name, value) {
    try { localStorage.setItem(name, value); } catch (error) { /* kept for this page only */ }
  }

  // --- theme: the toggle flips between light and dark, starting from what is shown ---
  function isDark() {
    var chosen = root.getAttribute("data-theme");
    if (chosen) return chosen === "dark";
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  }

  function showTheme(button) {
    var dark = isDark();
    button.setAttribute("aria-pressed", dark ? "true" : "false");
    button.textContent = dark ? "Light mode" : "Dark mode";
  }

  var toggle = document.querySelector("[data-theme-toggle]");
  if (toggle) {
    toggle.hidden = false;
    showTheme(toggle);
    toggle.addEventListener("click", function () {
      var next = isDark() ? "light" : "dark";
      root.setAttribute("data-theme", next);
      store("inspector-theme", next);
      showTheme(toggle);
    });
    if (window.matchMedia) {
      var query = window.matchMedia("(prefers-color-scheme: dark)");
      if (query.addEventListener) query.addEventListener("change", function () { showTheme(toggle); });
    }
  }

  // --- copy buttons: <button data-copy-text="VALUE"> or data-copy-from="ELEMENT ID" ---
  function said(button, text) {
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    button.textContent = text;
    setTimeout(function () { button.textContent = label; }, 2000);
  }

  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "hidden-copy";
    document.body.appendChild(area);
    area.select();
    var done = false;
    try { done = document.execCommand("copy"); } catch (error) { done = false; }
    document.body.removeChild(area);
    return done;
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-text], [data-copy-from]");
    if (!button) return;
    var text = button.getAttribute("data-copy-text");
    if (text === null) {
      var source = document.getElementById(button.getAttribute("data-copy-from"));
      if (!source) return;
      text = "value" in source && source.value !== undefined ? source.value : source.textContent;
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { said(button, "Copied"); },
        function () { said(button, fallback(text) ? "Copied" : "Press Ctrl+C"); }
      );
    } else {
      said(button, fallback(text) ? "Copied" : "Press Ctrl+C");
    }
  });

  // Copy buttons are drawn hidden, for pages seen without JavaScript.
  Array.prototype.forEach.call(document.querySelectorAll("button.copy[hidden]"), function (b) {
    b.hidden = false;
  });
  document.body.addEventListener("htmx:afterSwap", function (event) {
    Array.prototype.forEach.call(event.target.querySelectorAll("button.copy[hidden]"), function (b) {
      b.hidden = false;
    });
  });
})();

// Runs in <head>, before the page is drawn, so a chosen theme never flashes the
// other one: a theme picked with the header's toggle is kept in localStorage and
// set as <html data-theme>; with none kept, the CSS follows the system setting.
// The timeline's "show thinking / tool calls" choices are restored the same way.
(function () {
  "use strict";
  var root = document.documentElement;
  try {
    var theme = localStorage.getItem("inspector-theme");
    if (theme === "dark" || theme === "light") root.setAttribute("data-theme", theme);
    if (localStorage.getItem("inspector-hide-thinking") === "1") root.classList.add("hide-thinking");
    if (localStorage.getItem("inspector-hide-calls") === "1") root.classList.add("hide-calls");
  } catch (error) {
    // Storage refused (a private window's policy): the system setting applies.
  }
})();

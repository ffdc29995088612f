// Copy buttons of the share panel: <button data-copy="ID"> copies the value of
// the input with that id. The panel arrives by htmx, so one listener on the
// document serves every copy button, now and later. Without JavaScript the
// link stays in a read-only input, ready to select.
(function () {
  "use strict";

  function copied(button, text) {
    button.textContent = text;
    setTimeout(function () { button.textContent = "Copy"; }, 2000);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var input = document.getElementById(button.getAttribute("data-copy"));
    if (!input) return;
    input.select();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(input.value).then(
        function () { copied(button, "Copied"); },
        function () { copied(button, "Press Ctrl+C"); }
      );
    } else {
      // Plain http on another host: the Clipboard API is missing; the old command still works.
      copied(button, document.execCommand("copy") ? "Copied" : "Press Ctrl+C");
    }
  });
})();

// The upload page's drop zone: a dropped file goes into the form's file input
// and the form is sent. Without JavaScript the same input and button work.
(function () {
  "use strict";
  var zone = document.querySelector("[data-dropzone]");
  if (!zone) return;
  var input = zone.querySelector("input[type=file]");
  var form = zone.closest("form");
  var label = zone.querySelector("[data-dropzone-name]");

  function send() {
    if (!input.files.length) return;
    label.textContent = "Reading " + input.files[0].name + "…";
    zone.classList.add("busy");
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  }

  // Only file drags are ours: dropping text into the paste box works as usual.
  function carriesFiles(event) {
    var types = event.dataTransfer && event.dataTransfer.types;
    return !!types && Array.prototype.indexOf.call(types, "Files") !== -1;
  }

  function over(event) {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    zone.classList.add("over");
  }

  function leave(event) {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    zone.classList.remove("over");
  }

  function drop(event) {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    zone.classList.remove("over");
    var files = event.dataTransfer && event.dataTransfer.files;
    if (!files || !files.length) return;
    input.files = files;
    send();
  }

  // A file dropped anywhere on the page counts, so a near miss does not make
  // the browser navigate away to show the file.
  document.addEventListener("dragover", over);
  document.addEventListener("dragleave", leave);
  document.addEventListener("drop", drop);
  input.addEventListener("change", send);
})();

// The upload page: a dropped (or chosen) file goes into the form's file input
// and the form is sent, with its progress shown: the bytes sent, then
// "diagnosing" while the server reads and checks it. Without JavaScript the
// same input and button send the form as a plain POST.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form) return;

  function zone() { return form.querySelector("[data-dropzone]"); }
  function input() { return form.querySelector("[data-dropzone] input[type=file]"); }

  function size(bytes) {
    if (bytes >= 1024 * 1024) return (bytes / (1024 * 1024)).toFixed(1) + " MB";
    if (bytes >= 1024) return (bytes / 1024).toFixed(1) + " KB";
    return bytes + " bytes";
  }

  function status(text, percent) {
    var box = form.querySelector("[data-upload-progress]");
    if (!box) return;
    box.hidden = false;
    box.querySelector("[data-upload-status]").textContent = text;
    var bar = box.querySelector("progress");
    if (percent === null) bar.removeAttribute("value"); else bar.value = percent;
  }

  function send() {
    var file = input() && input().files[0];
    if (!file) return;
    var label = form.querySelector("[data-dropzone-name]");
    if (label) label.textContent = file.name;
    if (form.requestSubmit) form.requestSubmit(); else submit(null);
  }

  // The server's answer to a form it refused: its errors replace the form's own.
  function showRefusal(html) {
    var page = new DOMParser().parseFromString(html, "text/html");
    var fresh = page.getElementById("upload-form");
    if (!fresh) { document.open(); document.write(html); document.close(); return; }
    form.innerHTML = fresh.innerHTML;
    // The address a plain POST would have ended on, as the page now shows its answer.
    if (window.history && history.replaceState) history.replaceState(null, "", form.action);
    var alert = form.querySelector("[role=alert]");
    if (alert) { alert.setAttribute("tabindex", "-1"); alert.focus(); }
  }

  function submit(event) {
    if (!window.FormData || !window.XMLHttpRequest) {
      if (!event) form.submit();
      return;
    }
    if (event) event.preventDefault();
    var file = input() && input().files[0];
    var name = file ? file.name : "the pasted text";
    var request = new XMLHttpRequest();
    request.open("POST", form.action);
    request.setRequestHeader("Accept", "application/json");
    request.upload.addEventListener("progress", function (progress) {
      if (!progress.lengthComputable) { status("Sending " + name + "…", null); return; }
      var percent = Math.round(100 * progress.loaded / progress.total);
      status("Sending " + name + ": " + size(progress.loaded) + " of " + size(progress.total) +
             " (" + percent + "%)", percent);
    });
    request.upload.addEventListener("load", function () {
      status("Sent " + name + ". Diagnosing it: reading every message and checking it " +
             "against each provider…", null);
    });
    request.addEventListener("load", function () {
      var answer = null;
      try { answer = JSON.parse(request.responseText); } catch (error) { answer = null; }
      if (request.status === 200 && answer && answer.location) {
        status("Diagnosed " + name + ". Opening its timeline…", 100);
        window.location.assign(answer.location);
        return;
      }
      var box = form.querySelector("[data-upload-progress]");
      if (box) box.hidden = true;
      var dz = zone();
      if (dz) dz.classList.remove("busy");
      showRefusal(request.responseText);
    });
    request.addEventListener("error", function () {
      status("Sending " + name + " failed: the connection was lost. Try again.", 0);
    });
    var dz = zone();
    if (dz) dz.classList.add("busy");
    status("Sending " + name + "…", 0);
    request.send(new FormData(form));
  }

  // Only file drags are ours: dropping text into the paste box works as usual.
  function carriesFiles(event) {
    var types = event.dataTransfer && event.dataTransfer.types;
    return !!types && Array.prototype.indexOf.call(types, "Files") !== -1;
  }

  function over(event) {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    if (zone()) zone().classList.add("over");
  }

  function leave(event) {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    if (zone()) zone().classList.remove("over");
  }

  function drop(event) {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    if (zone()) zone().classList.remove("over");
    var files = event.dataTransfer && event.dataTransfer.files;
    if (!files || !files.length || !input()) return;
    input().files = files;
    send();
  }

  // A file dropped anywhere on the page counts, so a near miss does not make
  // the browser navigate away to show the file. Listeners sit on the document:
  // a refused upload redraws the form.
  document.addEventListener("dragover", over);
  document.addEventListener("dragleave", leave);
  document.addEventListener("drop", drop);
  document.addEventListener("change", function (event) {
    if (event.target === input()) send();
  });
  form.addEventListener("submit", submit);
})();

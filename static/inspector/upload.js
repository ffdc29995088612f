// The upload page: a dropped (or chosen) file goes into the form's file input,
// named with its size, and waits there until Inspect sends the form, so the
// shape and the project can be set first (the last ones chosen are filled in
// again). Sent, its progress is shown: the bytes sent, then "diagnosing" while
// the server reads and checks it. Without JavaScript the same input and button
// send the form as a plain POST.
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

  // A file chosen or dropped: named, and the button that sends it is the next step.
  function chosen() {
    var file = input() && input().files[0];
    if (!file) return;
    var label = form.querySelector("[data-dropzone-name]");
    if (label) label.textContent = file.name + " (" + size(file.size) + "): set the shape " +
      "and project if you need to, then press Inspect.";
    var dz = zone();
    if (dz) dz.classList.add("chosen");
    var button = form.querySelector("button[type=submit]");
    if (button) button.focus();
  }

  // The shape and project last sent are the likeliest next ones.
  var REMEMBERED = ["format", "project"];
  function remember() {
    REMEMBERED.forEach(function (name) {
      var field = form.elements[name];
      try { if (field) localStorage.setItem("inspector-upload-" + name, field.value); } catch (e) { /* not kept */ }
    });
  }
  function recall() {
    REMEMBERED.forEach(function (name) {
      var field = form.elements[name];
      var value = null;
      try { value = localStorage.getItem("inspector-upload-" + name); } catch (e) { value = null; }
      if (!field || value === null || field.value) return;
      if (field.tagName === "SELECT" && !Array.prototype.some.call(field.options, function (o) { return o.value === value; })) return;
      field.value = value;
    });
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
    remember();
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
      if (request.status === 200 && !answer) {
        // An agent's database with several sessions: the page listing them, as sent.
        status("Diagnosed the sessions of " + name + ".", 100);
        document.open(); document.write(request.responseText); document.close();
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
    chosen();
  }

  // A file dropped anywhere on the page counts, so a near miss does not make
  // the browser navigate away to show the file. Listeners sit on the document:
  // a refused upload redraws the form.
  document.addEventListener("dragover", over);
  document.addEventListener("dragleave", leave);
  document.addEventListener("drop", drop);
  document.addEventListener("change", function (event) {
    if (event.target === input()) chosen();
  });
  form.addEventListener("submit", submit);
  recall();
})();

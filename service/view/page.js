/* Step through the round (service/view/page.py): an addition to the static page, which
   says everything without it. Shows the four hands after any action; keys: arrows, Home,
   End. The cards are clones of the page's own card faces (#card-faces), so they are drawn
   in one place. */
(function () {
  "use strict";
  var source = document.getElementById("round-data");
  var player = document.getElementById("player");
  if (!source || !player) { return; }
  var data = JSON.parse(source.textContent);
  if (!data.steps.length) { return; }
  var faces = {};
  var template = document.getElementById("card-faces");
  Array.prototype.forEach.call(template.content.querySelectorAll("[data-code]"), function (el) {
    faces[el.getAttribute("data-code")] = el;
  });
  var rows = data.steps.map(function (s) { return document.getElementById("a" + s.i); });
  var label = player.querySelector(".where");
  var panel = player.querySelector(".hands");
  var at = -1;

  function cards(codes) {
    var box = document.createElement("span");
    box.className = "cards";
    codes.forEach(function (c) { box.appendChild(faces[c].cloneNode(true)); });
    return box;
  }

  function hands(k) {
    panel.textContent = "";
    data.steps[k].hands.forEach(function (codes, seat) {
      var row = document.createElement("div");
      row.className = "hand";
      var who = document.createElement("span");
      who.className = "seat t" + (seat % 2);
      who.textContent = "seat " + seat;
      var count = document.createElement("span");
      count.className = "count";
      count.textContent = codes.length ? codes.length + " cards" : "out";
      row.appendChild(who);
      row.appendChild(count);
      row.appendChild(cards(codes));
      panel.appendChild(row);
    });
  }

  function show(k, scroll) {
    k = Math.max(0, Math.min(data.steps.length - 1, k));
    if (at >= 0 && rows[at]) { rows[at].classList.remove("current"); }
    at = k;
    if (rows[k]) {
      rows[k].classList.add("current");
      if (scroll) { rows[k].scrollIntoView({block: "center"}); }
    }
    label.textContent = "action " + data.steps[k].i + " (" + (k + 1) + " of " +
      data.steps.length + "): hands after it";
    hands(k);
  }

  player.querySelector(".first").addEventListener("click", function () { show(0, true); });
  player.querySelector(".prev").addEventListener("click", function () { show(at - 1, true); });
  player.querySelector(".next").addEventListener("click", function () { show(at + 1, true); });
  player.querySelector(".last").addEventListener("click", function () {
    show(data.steps.length - 1, true);
  });
  player.querySelector(".toggle").addEventListener("click", function () {
    panel.hidden = !panel.hidden;
  });
  rows.forEach(function (row, k) {
    if (row) { row.addEventListener("click", function () { show(k, false); }); }
  });
  document.addEventListener("keydown", function (e) {
    var moves = {ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: data.steps.length - 1};
    if (e.key in moves && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      show(moves[e.key], true);
    }
  });
  player.hidden = false;
  panel.hidden = true;
  show(0, false);
}());

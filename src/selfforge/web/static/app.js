// Live updates: the server pushes rows (already escaped HTML it rendered) and the stage.
"use strict";
(function () {
  const url = document.body.dataset.events;
  if (!url || !window.EventSource) return;
  const live = document.getElementById("live");
  const table = document.getElementById("timeline");
  const source = new EventSource(url);
  source.addEventListener("row", function (event) {
    const data = JSON.parse(event.data);
    const shown = document.getElementById("attempt-" + data.id);
    if (shown) {
      shown.outerHTML = data.html;
    } else if (table) {
      table.tBodies[0].insertAdjacentHTML("afterbegin", data.html);
      document.getElementById("attempt-" + data.id).classList.add("new");
    }
  });
  source.addEventListener("stage", function (event) {
    live.textContent = JSON.parse(event.data).text;
  });
})();

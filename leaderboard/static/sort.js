// Click (or Enter on) a column header to sort its table; again to reverse. No framework, no
// network: works from file://. Cells sort by data-sort (numbers numerically), missing ones last.
(function () {
  function key(cell) {
    if (!cell || !cell.hasAttribute("data-sort")) return null;
    var raw = cell.getAttribute("data-sort");
    var num = Number(raw);
    return raw !== "" && !isNaN(num) ? num : raw.toLowerCase();
  }
  function sortBy(table, col, th) {
    var body = table.tBodies[0];
    var descending = th.getAttribute("aria-sort") === "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      if (x === null && y === null) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      var order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener("click", function () { sortBy(table, col, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") sortBy(table, col, th); });
    });
  });
})();

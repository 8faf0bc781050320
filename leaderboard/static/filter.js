// The search box and facet selects above a table (form.filters, data-table = the table's id):
// a row is shown when it has every chosen facet value (its data-facets JSON) and every word of
// the search in its text; the others get the hidden attribute and stay in the DOM, so sort.js
// orders them with the rest and a later change of filter can show them again. No framework, no
// network: works from file://.
(function () {
  function facetsOf(row) {
    try { return JSON.parse(row.getAttribute("data-facets") || "{}"); } catch (e) { return {}; }
  }
  Array.prototype.forEach.call(document.querySelectorAll("form.filters"), function (form) {
    var table = document.getElementById(form.getAttribute("data-table"));
    if (!table) return;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var facets = rows.map(facetsOf);  // parsed once; rows is in page order, the sort moves only the DOM
    var texts = rows.map(function (r) { return r.textContent.toLowerCase(); });
    var search = form.querySelector("[data-search]");
    var selects = Array.prototype.slice.call(form.querySelectorAll("select[data-facet]"));
    var shown = form.querySelector("output");
    function apply() {
      var words = search ? search.value.toLowerCase().split(/\s+/).filter(Boolean) : [];
      var chosen = selects.filter(function (s) { return s.value !== ""; });
      var count = 0;
      rows.forEach(function (row, i) {
        var ok = chosen.every(function (s) {
          var values = facets[i][s.getAttribute("data-facet")] || [];
          return values.indexOf(s.value) >= 0;
        }) && words.every(function (w) { return texts[i].indexOf(w) >= 0; });
        row.hidden = !ok;
        if (ok) count += 1;
      });
      if (shown) shown.textContent = count + " of " + rows.length + " rows shown";
    }
    // "CSV of the rows shown": the current view (filters and sort order) as the page shows it, made
    // in the browser (a Blob), since the site's downloads are whole tables written at build time.
    var exporter = form.querySelector("[data-export]");
    function cellText(cell) {
      var copy = cell.cloneNode(true);
      Array.prototype.forEach.call(copy.querySelectorAll(".badge"), function (b) { b.remove(); });
      return copy.textContent.trim();
    }
    // A text a spreadsheet would run as a formula goes behind an apostrophe, as in the site's own
    // CSV downloads (leaderboard/downloads.py: csv_cell); the signed numbers the table shows do not.
    var NUMBER = "[-+]?(?:\\d+\\.?\\d*|\\.\\d+)(?:e[-+]?\\d+)?%?";
    var SHOWN_NUMBER = new RegExp("^" + NUMBER + "(?: \\[" + NUMBER + ", " + NUMBER + "\\])?$");
    function csvLine(values) {
      return values.map(function (v) {
        if (/^[=+\-@\t\r]/.test(v) && !SHOWN_NUMBER.test(v)) v = "'" + v;
        return /[",\n\r]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v;
      }).join(",");
    }
    if (exporter) exporter.addEventListener("click", function () {
      var lines = [csvLine(Array.prototype.map.call(table.tHead.rows[0].cells, cellText))];
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        if (!row.hidden) lines.push(csvLine(Array.prototype.map.call(row.cells, cellText)));
      });
      var link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], {type: "text/csv"}));
      link.download = table.id + "-shown.csv";
      document.body.appendChild(link);
      link.click();
      link.remove();
    });
    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    apply();  // a browser may restore a filter's value on reload
  });
})();

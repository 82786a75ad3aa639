// Partita's status page: polls /api/jobs (nodes, jobs), the selected job's
// /api/jobs/ID/metrics and the nodes' resources over time (/api/nodes) every second, and
// draws the curves with d3 (Debian's libjs-d3, v3 API). The selected job is the one in the
// URL (/jobs/ID), else the newest.
// Every chart's <svg> carries data-series (its name) and data-points (how many points it
// draws), which the browser test reads.
(function () {
  "use strict";
  var POLL_MS = 1000;
  var WIDTH = 420, HEIGHT = 240, MARGIN = {top: 26, right: 16, bottom: 34, left: 56};
  var COLORS = {train: "#1f77b4", val: "#ff7f0e", test: "#2ca02c", step: "#1f77b4"};
  var fromUrl = (function () {
    var m = window.location.pathname.match(/^\/jobs\/([^\/]+)$/);
    return m ? decodeURIComponent(m[1]) : null;
  })();

  function fmt(x, digits) {
    return (x === null || x === undefined || isNaN(x)) ? "" : Number(x).toFixed(digits);
  }

  function fill(tableId, rows, cells, rowClass) {
    var tr = d3.select("#" + tableId + " tbody").selectAll("tr").data(rows);
    tr.enter().append("tr");
    tr.exit().remove();
    tr.attr("class", rowClass || null);
    var td = tr.selectAll("td").data(cells);
    td.enter().append("td");
    td.exit().remove();
    td.attr("class", function (c) { return c.cls || null; })
      .html(function (c) { return c.html; });
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;"}[c];
    });
  }

  // A line chart of one or more series: [{name, color, points: [[x, y]...]}], in the
  // element `parent` ("charts" unless given).
  function chart(id, title, xLabel, series, dots, parent) {
    var all = [];
    series.forEach(function (s) { all = all.concat(s.points); });
    var svg = d3.select("#chart-" + id);
    if (svg.empty()) {
      svg = d3.select("#" + (parent || "charts")).append("svg").attr("id", "chart-" + id).attr("class", "chart")
        .attr("width", WIDTH).attr("height", HEIGHT).attr("data-series", id);
    }
    svg.attr("data-points", all.length);
    svg.selectAll("*").remove();
    svg.append("text").attr("class", "title").attr("x", MARGIN.left).attr("y", 16).text(title);
    var g = svg.append("g").attr("transform", "translate(" + MARGIN.left + "," + MARGIN.top + ")");
    var w = WIDTH - MARGIN.left - MARGIN.right, h = HEIGHT - MARGIN.top - MARGIN.bottom;
    if (all.length === 0) {
      g.append("text").attr("x", w / 2).attr("y", h / 2).attr("text-anchor", "middle").text("no data yet");
      return;
    }
    var xExtent = d3.extent(all, function (p) { return p[0]; });
    var yExtent = d3.extent(all, function (p) { return p[1]; });
    if (xExtent[0] === xExtent[1]) { xExtent = [xExtent[0] - 1, xExtent[1] + 1]; }
    if (yExtent[0] === yExtent[1]) { yExtent = [yExtent[0] - 0.5, yExtent[1] + 0.5]; }
    var x = d3.scale.linear().domain(xExtent).range([0, w]);
    var y = d3.scale.linear().domain(yExtent).nice().range([h, 0]);
    g.append("g").attr("class", "axis").attr("transform", "translate(0," + h + ")")
      .call(d3.svg.axis().scale(x).orient("bottom").ticks(6));
    g.append("g").attr("class", "axis").call(d3.svg.axis().scale(y).orient("left").ticks(5));
    g.append("text").attr("x", w).attr("y", h + 30).attr("text-anchor", "end").attr("class", "legend").text(xLabel);
    var line = d3.svg.line().x(function (p) { return x(p[0]); }).y(function (p) { return y(p[1]); });
    series.forEach(function (s, i) {
      g.append("path").datum(s.points).attr("class", "line series-" + s.name)
        .attr("stroke", s.color).attr("d", line);
      if (dots) {
        g.selectAll("circle.point-" + s.name).data(s.points).enter().append("circle")
          .attr("class", "point point-" + s.name).attr("r", 2.5).attr("fill", s.color)
          .attr("cx", function (p) { return x(p[0]); }).attr("cy", function (p) { return y(p[1]); });
      }
      if (series.length > 1) {
        // On the title's line, right-aligned: never over the curves.
        g.append("text").attr("class", "legend").attr("x", w - 40 * (series.length - 1 - i)).attr("y", -12)
          .attr("text-anchor", "end").attr("fill", s.color).text(s.name);
      }
    });
  }

  function epochSeries(epochs, field, names) {
    return names.map(function (name) {
      return {name: name, color: COLORS[name],
              points: epochs.map(function (e) { return [e.epoch, e[name + "_" + field]]; })};
    });
  }

  function drawMetrics(m) {
    var steps = m.steps, epochs = m.epochs;
    var strideNote = steps.stride > 1 ? " (mean of " + steps.stride + " steps)" : "";
    chart("step-loss", "Loss per step" + strideNote, "step",
          [{name: "step", color: COLORS.step, points: steps.loss}], false);
    chart("step-accuracy", "Accuracy per step" + strideNote, "step",
          [{name: "step", color: COLORS.step, points: steps.accuracy}], false);
    chart("step-throughput", "Steps/s (over the epoch so far)" + strideNote, "step",
          [{name: "step", color: COLORS.step, points: steps.steps_per_second}], false);
    chart("epoch-loss", "Loss per epoch", "epoch", epochSeries(epochs, "loss", ["train", "val", "test"]), true);
    chart("epoch-accuracy", "Accuracy per epoch", "epoch", epochSeries(epochs, "accuracy", ["train", "val", "test"]), true);
    chart("epoch-throughput", "Batches/s per epoch", "epoch",
          [{name: "train", color: COLORS.train,
            points: epochs.map(function (e) { return [e.epoch, e.batches_per_second]; })}], true);
  }

  // One curve per node, in the colours of d3's category10 (the same node, the same colour).
  var NODE_COLORS = d3.scale.category10();
  function nodeSeries(nodes, field, scale) {
    return nodes.filter(function (n) { return n.history; }).map(function (n) {
      return {name: n.name, color: NODE_COLORS(n.name),
              points: n.history[field].map(function (p) { return [p[0], p[1] * scale]; })};
    });
  }

  function drawNodes(data) {
    var nodes = data.nodes;
    var any = nodes.some(function (n) { return n.history; });
    d3.select("#node-charts-title").style("display", any ? null : "none");
    if (!any) { return; }
    var MiB = 1 / (1 << 20);
    chart("node-cpu", "CPU (cores busy)", "seconds", nodeSeries(nodes, "cpu_cores", 1), false, "node-charts");
    chart("node-memory", "Resident memory (MiB)", "seconds", nodeSeries(nodes, "resident_bytes", MiB), false, "node-charts");
    chart("node-threads", "Threads", "seconds", nodeSeries(nodes, "threads", 1), false, "node-charts");
    chart("node-received", "Network in (KiB/s)", "seconds",
          nodeSeries(nodes, "network_receive_bytes_per_second", 1 / 1024), false, "node-charts");
    chart("node-sent", "Network out (KiB/s)", "seconds",
          nodeSeries(nodes, "network_transmit_bytes_per_second", 1 / 1024), false, "node-charts");
    chart("node-cache", "Staging cache (MiB)", "seconds", nodeSeries(nodes, "staging_cache_bytes", MiB), false, "node-charts");
  }

  function actorsByNode(j) {
    return (j.actors_by_node || []).map(function (a) {
      return escapeHtml(a.node) + ": " + a.actors;
    }).join(", ");
  }

  function showError(text) { d3.select("#error").text(text); }

  function poll() {
    d3.json("/api/jobs", function (error, data) {
      if (error) { showError("cannot reach the status page's server (" + (error.status || "no answer") + ")"); return; }
      showError("");
      fill("nodes", data.nodes, function (n) {
        return [{html: escapeHtml(n.name)}, {html: escapeHtml(n.state), cls: "state-" + n.state}, {html: escapeHtml(n.detail)}];
      });
      var selected = fromUrl || (data.jobs.length ? data.jobs[data.jobs.length - 1].id : null);
      fill("jobs", data.jobs, function (j) {
        var val = j.last_epoch ? j.last_epoch.val_accuracy : null;
        return [{html: "<a href=\"/jobs/" + encodeURIComponent(j.id) + "\">" + escapeHtml(j.id) + "</a>"},
                {html: escapeHtml(j.state), cls: "job-state state-" + j.state},
                {html: j.epoch + "/" + j.epochs, cls: "num"},
                {html: j.step + "/" + j.steps, cls: "num"},
                {html: fmt(j.steps_per_second, 2), cls: "num"},
                {html: fmt(j.loss, 4), cls: "num"},
                {html: fmt(j.accuracy, 4), cls: "num"},
                {html: fmt(val, 4), cls: "num"},
                {html: actorsByNode(j), cls: "actors"},
                {html: escapeHtml(j.message)}];
      }, function (j) { return j.id === selected ? "selected" : null; });
      if (!selected) { d3.select("#curves-title").text("Curves (no job yet)"); return; }
      d3.select("#curves-title").text("Curves of " + selected);
      d3.json("/api/jobs/" + encodeURIComponent(selected) + "/metrics", function (err, m) {
        if (err) { showError("no curves for job '" + selected + "' (" + (err.status || "no answer") + ")"); return; }
        drawMetrics(m);
      });
    });
  }

  function pollNodes() {
    d3.json("/api/nodes", function (error, data) {
      if (!error) { drawNodes(data); }
    });
  }

  poll();
  pollNodes();
  setInterval(poll, POLL_MS);
  setInterval(pollNodes, POLL_MS);
})();

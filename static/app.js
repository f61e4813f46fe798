/* mdboost dashboard enhancements: charts (islands) and local times. One htmx.onLoad handler;
   the page reads fine without any of this (STYLE.md habit 12). */
"use strict";

(function () {
  const MAX_POINTS = 2000; // thin the older half beyond this, so a page left open for days stays light
  const charts = new Map(); // run id -> {chart, url, lastTs, busy}

  function within(root, selector) {
    const found = Array.from(root.querySelectorAll(selector));
    return root.matches && root.matches(selector) ? [root, ...found] : found;
  }

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function localTime(ms, withDay) {
    const options = { hour: "2-digit", minute: "2-digit" };
    // Reshapes run for days: a weekday alone is ambiguous a week out, so give the date too.
    if (withDay) Object.assign(options, { weekday: "short", day: "numeric", month: "short" });
    return new Date(ms).toLocaleString([], options);
  }

  function localiseTimes(root) {
    for (const el of within(root, "time[data-ts]")) {
      el.textContent = localTime(Number(el.dataset.ts) * 1000, true);
    }
  }

  function markersOf(canvas) {
    const list = document.getElementById(canvas.dataset.markers);
    if (!list) return [];
    return Array.from(list.querySelectorAll("li[data-ts]"), (li) => ({
      x: Number(li.dataset.ts) * 1000,
      label: li.dataset.label,
    }));
  }

  // Dashed vertical lines where a preset was applied or reverted, labelled with its effect.
  const markerPlugin = {
    id: "mdboostMarkers",
    afterDatasetsDraw(chart, args, options) {
      const { ctx, chartArea, scales } = chart;
      ctx.save();
      ctx.strokeStyle = options.color;
      ctx.fillStyle = options.color;
      ctx.setLineDash([4, 4]);
      ctx.font = "11px system-ui, sans-serif";
      for (const marker of options.markers || []) {
        const x = scales.x.getPixelForValue(marker.x);
        if (x < chartArea.left || x > chartArea.right) continue;
        ctx.beginPath();
        ctx.moveTo(x, chartArea.top);
        ctx.lineTo(x, chartArea.bottom);
        ctx.stroke();
        const width = ctx.measureText(marker.label).width;
        const left = x + width + 4 > chartArea.right ? x - width - 4 : x + 4;
        ctx.fillText(marker.label, left, chartArea.top + 12);
      }
      ctx.restore();
    },
  };

  function points(samples) {
    const progress = [];
    const speed = [];
    for (const s of samples) {
      if (s.percent === null) continue;
      const x = s.ts * 1000;
      progress.push({ x, y: s.percent });
      speed.push({ x, y: s.speed_kb_s === null ? null : (s.speed_kb_s * 1024) / 1e6 });
    }
    return { progress, speed };
  }

  function thin(data) {
    if (data.length <= MAX_POINTS) return;
    const half = Math.floor(data.length / 2);
    const older = data.slice(0, half).filter((_, i) => i % 2 === 0);
    data.splice(0, half, ...older);
  }

  function makeChart(canvas, data) {
    const fg = cssVar("--muted");
    const grid = cssVar("--grid");
    const spanDays = (d) => (d.length > 1 ? (d[d.length - 1].x - d[0].x) / 864e5 : 0);
    return new Chart(canvas, {
      type: "line",
      data: {
        datasets: [
          { label: "Progress (%)", data: data.progress, yAxisID: "progress", borderColor: cssVar("--accent"), backgroundColor: cssVar("--accent"), borderWidth: 2, pointRadius: 0 },
          { label: "Speed (MB/s)", data: data.speed, yAxisID: "speed", borderColor: cssVar("--speed"), backgroundColor: cssVar("--speed"), borderWidth: 1.5, pointRadius: 0, spanGaps: true },
        ],
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        parsing: false,
        normalized: true,
        interaction: { mode: "index", intersect: false },
        scales: {
          x: {
            type: "linear",
            min: data.progress.length ? data.progress[0].x : undefined,
            max: data.progress.length ? data.progress[data.progress.length - 1].x : undefined,
            grid: { color: grid },
            ticks: {
              color: fg,
              maxTicksLimit: 5,
              maxRotation: 0,
              callback(value) {
                return localTime(value, spanDays(this.chart.data.datasets[0].data) > 0.8);
              },
            },
          },
          progress: { position: "left", suggestedMin: 0, suggestedMax: 100, grid: { color: grid }, ticks: { color: fg }, title: { display: true, text: "%", color: fg } },
          speed: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, ticks: { color: fg }, title: { display: true, text: "MB/s", color: fg } },
        },
        plugins: {
          legend: { labels: { color: fg, boxWidth: 12 } },
          tooltip: { callbacks: { title: (items) => (items.length ? localTime(items[0].parsed.x, true) : "") } },
          mdboostMarkers: { color: cssVar("--fg"), markers: markersOf(canvas) },
        },
      },
      plugins: [markerPlugin],
    });
  }

  async function fetchSamples(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return (await response.json()).samples;
  }

  async function buildChart(canvas) {
    const run = canvas.dataset.run;
    const old = charts.get(run);
    if (old && old.chart.canvas === canvas) return;
    if (old) old.chart.destroy();
    const entry = { chart: null, url: canvas.dataset.series, lastTs: 0, busy: true };
    charts.set(run, entry);
    try {
      const samples = await fetchSamples(entry.url);
      entry.lastTs = samples.length ? samples[samples.length - 1].ts : 0;
      entry.chart = makeChart(canvas, points(samples));
    } catch (error) {
      console.warn("mdboost chart:", error);
    } finally {
      entry.busy = false;
    }
  }

  // After a card's poll: fetch only the samples since the last one and append them.
  async function appendNew(run) {
    const entry = charts.get(run);
    if (!entry || entry.busy || !entry.chart) return;
    entry.busy = true;
    try {
      const url = new URL(entry.url, location.href);
      url.searchParams.set("since", String(entry.lastTs + 0.001));
      const fresh = points(await fetchSamples(url));
      if (fresh.progress.length) {
        const [progress, speed] = entry.chart.data.datasets;
        progress.data.push(...fresh.progress);
        speed.data.push(...fresh.speed);
        thin(progress.data);
        thin(speed.data);
        const last = fresh.progress[fresh.progress.length - 1].x;
        entry.chart.options.scales.x.min = progress.data[0].x;
        entry.chart.options.scales.x.max = last;
        entry.lastTs = last / 1000;
        entry.chart.update("none");
      }
    } catch (error) {
      console.warn("mdboost chart:", error);
    } finally {
      entry.busy = false;
    }
  }

  function refreshMarkers(list) {
    const canvas = document.querySelector(`canvas[data-markers="${list.id}"]`);
    const entry = canvas && charts.get(canvas.dataset.run);
    if (!entry || !entry.chart) return;
    entry.chart.options.plugins.mdboostMarkers.markers = markersOf(canvas);
    entry.chart.update("none");
  }

  htmx.onLoad(function (root) {
    localiseTimes(root);
    for (const canvas of within(root, "canvas[data-series]")) buildChart(canvas);
    for (const card of within(root, "article[data-run]")) appendNew(card.dataset.run);
    for (const list of within(root, "ol.markers[id]")) refreshMarkers(list);
  });
})();

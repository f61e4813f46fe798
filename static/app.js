/* mdboost dashboard enhancements: charts (islands) and local times. One htmx.onLoad handler;
   the page reads fine without any of this. */
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
    const options = { hour: "2-digit", minute: "2-digit", hourCycle: "h23" };
    // Reshapes run for days: a weekday alone is ambiguous a week out, so give the date too.
    if (withDay) Object.assign(options, { weekday: "short", day: "numeric", month: "short" });
    return new Date(ms).toLocaleString([], options);
  }

  // Times come from the server in their final form, in the zone this browser tells it by a
  // cookie. Only a page rendered before the server knew the zone is rewritten, once, in the
  // server's own format (templating.CLOCK_FORMAT), so nothing changes width.
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const clockFormat = new Intl.DateTimeFormat("en-GB", {
    timeZone: zone, weekday: "short", day: "2-digit", month: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23",
  });

  function clock(ms) {
    const part = Object.fromEntries(clockFormat.formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
    return `${part.weekday} ${part.day} ${part.month} ${part.hour}:${part.minute}`;
  }

  function localiseTimes(root) {
    if (!zone || document.documentElement.dataset.tz === zone) return;
    // The zone the page names (and the schedule form sends) becomes this browser's with them.
    for (const el of within(root, "[data-page-zone]")) {
      if (el.tagName === "INPUT") el.value = zone;
      else el.textContent = zone;
    }
    for (const el of within(root, "time[data-ts]")) {
      const text = clock(Number(el.dataset.ts) * 1000);
      el.textContent = el.dataset.form === "day" ? text.split(" ").slice(0, 3).join(" ") : text; // templating.DAY_FORMAT
    }
  }

  if (zone) document.cookie = `tz=${zone}; path=/; max-age=31536000; SameSite=Strict`;

  // <details> the owner opened or closed stay so when a poll replaces the card around them.
  const detailsState = new Map(); // id -> open
  document.addEventListener("toggle", (event) => {
    if (event.target.matches && event.target.matches("details[id]")) detailsState.set(event.target.id, event.target.open);
  }, true);

  function keepDetails(root) {
    for (const details of within(root, "details[id]")) {
      const open = detailsState.get(details.id);
      if (open !== undefined && details.open !== open) details.open = open;
    }
  }

  function markersOf(canvas) {
    const list = document.getElementById(canvas.dataset.markers);
    if (!list) return [];
    // The flag's number is the item's number in the list under the chart (an <ol>).
    return Array.from(list.querySelectorAll("li[data-ts]"), (li, i) => ({
      x: Number(li.dataset.ts) * 1000,
      number: i + 1,
      flag: li.dataset.kind !== "autotune", // auto-tune's many steps: one band, named in the list
      text: li.textContent.trim(),
      item: li,
    }));
  }

  // One auto-tune's steps (consecutive auto-tune items in the list) as one labelled band.
  function bandsOf(markers) {
    const bands = [];
    let open = null;
    for (const marker of markers) {
      if (marker.flag) {
        open = null;
      } else if (open) {
        open.to = marker.x;
        open.steps += 1;
      } else {
        open = { from: marker.x, to: marker.x, steps: 1 };
        bands.push(open);
      }
    }
    return bands;
  }

  // The time axis: round times in the page's zone, 24-hour, the date where the day changes.
  const STEPS_MIN = [1, 2, 5, 10, 15, 30, 60, 120, 180, 240, 360, 720, 1440, 2880];
  const LABEL_PX = 60; // room for one time label with its day, and a gap
  const tickTime = new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  const tickDate = new Intl.DateTimeFormat("en-GB", { timeZone: zone, day: "numeric", month: "short" });
  const dayOf = (ms) => tickDate.format(new Date(ms));

  const zoneClock = new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "numeric", minute: "numeric", second: "numeric", hourCycle: "h23" });

  // Midnight of `ms`'s day in the page's zone, which need not be this browser's (a first visit
  // before the tz cookie, a NAS in another zone): round times count from there.
  function zoneMidnight(ms) {
    const part = Object.fromEntries(zoneClock.formatToParts(new Date(ms)).map((p) => [p.type, Number(p.value)]));
    return ms - ((part.hour * 60 + part.minute) * 60 + part.second) * 1000 - (ms % 1000);
  }

  function roundTimes(min, max, stepMin) {
    const start = zoneMidnight(min);
    const step = stepMin * 60000;
    const found = [];
    for (let t = start + Math.ceil((min - start) / step) * step; t <= max; t += step) found.push(t);
    return found;
  }

  // As many labels as fit side by side (a label with its day is about 50 px wide at 11 px: on a
  // phone eight ran together), 5 where there is room, at most 8 (weeks at two-day steps): the
  // largest round step that gives that many (fewer only on a very short run).
  function timeTicks(axis) {
    const { min, max } = axis;
    if (!(max > min)) return;
    const fit = Math.max(3, Math.floor((axis.chart.chartArea?.width || axis.chart.width) / LABEL_PX));
    let values = [];
    let step = STEPS_MIN[0];
    for (step of STEPS_MIN.slice().reverse()) {
      values = roundTimes(min, max, step);
      if (values.length >= Math.min(5, fit)) break;
    }
    // Too many: a multiple of the step, still counted from midnight (every other 12:00 would
    // leave no 00:00).
    const every = Math.ceil(values.length / Math.min(8, fit));
    if (every > 1) values = roundTimes(min, max, step * every);
    axis.ticks = values.map((value) => ({ value }));
  }

  // The first label names its day too, unless the next one (a day change) does, close by; a
  // midnight always does.
  function timeLabel(value, index, ticks) {
    const time = tickTime.format(new Date(value));
    const changes = (i) => i > 0 && i < ticks.length && dayOf(ticks[i - 1].value) !== dayOf(ticks[i].value);
    const dated = index === 0 ? !changes(1) || time === "00:00" : changes(index);
    return dated ? [time, dayOf(value)] : time;
  }

  const FLAG = 44; // px: a flag is a tap target

  // Dashed vertical lines at each tuning change; numbered flags (HTML buttons over the canvas)
  // that never overlap: a flag too close to the one before goes one row down.
  const markerPlugin = {
    id: "mdboostMarkers",
    afterDatasetsDraw(chart, args, options) {
      const { ctx, chartArea, scales } = chart;
      ctx.save();
      ctx.strokeStyle = options.color;
      ctx.setLineDash([4, 4]);
      for (const marker of options.markers || []) {
        if (!marker.flag) continue; // auto-tune steps: drawn as their band below
        const x = scales.x.getPixelForValue(marker.x);
        if (x < chartArea.left || x > chartArea.right) continue;
        ctx.beginPath();
        ctx.moveTo(x, chartArea.top);
        ctx.lineTo(x, chartArea.bottom);
        ctx.stroke();
      }
      ctx.setLineDash([]);
      ctx.fillStyle = options.color;
      ctx.textBaseline = "bottom";
      for (const band of bandsOf(options.markers || [])) {
        const left = Math.max(scales.x.getPixelForValue(band.from), chartArea.left);
        const right = Math.min(scales.x.getPixelForValue(band.to), chartArea.right);
        if (right < left) continue;
        const width = Math.max(right - left, 3);
        ctx.globalAlpha = 0.12;
        ctx.fillRect(left, chartArea.top, width, chartArea.bottom - chartArea.top);
        ctx.globalAlpha = 1;
        ctx.strokeRect(left, chartArea.top, width, chartArea.bottom - chartArea.top);
        const label = band.steps > 1 ? `Auto-tune (${band.steps} steps)` : "Auto-tune";
        const room = chartArea.right - left - 4;
        if (room > 20) ctx.fillText(label, left + 4, chartArea.bottom - 3, room);
      }
      ctx.fillStyle = options.gapColor;
      for (const gap of options.gaps || []) {
        const left = Math.max(scales.x.getPixelForValue(gap.from), chartArea.left);
        const right = Math.min(scales.x.getPixelForValue(gap.to), chartArea.right);
        if (right > left) ctx.fillRect(left, chartArea.top, right - left, chartArea.bottom - chartArea.top);
      }
      ctx.restore();
      placeFlags(chart, options);
    },
  };

  function flagLayer(chart) {
    const box = chart.canvas.parentElement;
    let layer = box.querySelector(".flags");
    if (!layer) {
      layer = document.createElement("div");
      layer.className = "flags";
      const tip = document.createElement("p");
      tip.className = "flag-tip";
      tip.hidden = true;
      tip.setAttribute("role", "status");
      box.append(layer, tip);
    }
    return layer;
  }

  function placeFlags(chart, options) {
    const { chartArea, scales } = chart;
    const layer = flagLayer(chart);
    const wanted = [];
    for (const marker of options.markers || []) {
      if (!marker.flag) continue;
      wanted.push({ ...marker, label: String(marker.number), kind: "marker" });
    }
    for (const gap of options.gaps || []) {
      wanted.push({ x: gap.to, label: "↻", kind: "restart", text: gap.text });
    }
    const placed = [];
    const rowEnds = [];
    for (const flag of wanted.sort((a, b) => a.x - b.x)) {
      let x = scales.x.getPixelForValue(flag.x);
      if (x < chartArea.left - 1) continue;
      // Newer than the last sample (the owner has just acted): at the plot's right edge, so the
      // flag shows with the answer and not a tick later, when the next sample reaches it.
      x = Math.min(x, chartArea.right);
      // Within the plot area: a flag at the run's first minute stays off the % axis's labels.
      const left = Math.min(Math.max(x - FLAG / 2, chartArea.left), chartArea.right - FLAG);
      let row = rowEnds.findIndex((end) => left >= end);
      if (row < 0) row = rowEnds.push(0) - 1;
      rowEnds[row] = left + FLAG;
      placed.push({ ...flag, left, top: chartArea.top + row * FLAG });
    }
    const key = JSON.stringify(placed.map((f) => [f.label, f.left, f.top, f.text]));
    if (layer.dataset.key === key) return;
    layer.dataset.key = key;
    layer.replaceChildren(
      ...placed.map((f) => {
        const button = document.createElement("button");
        button.type = "button";
        button.className = `flag-marker flag-${f.kind}`;
        button.textContent = f.label;
        button.title = f.text;
        button.setAttribute("aria-label", f.kind === "marker" ? `${f.number}: ${f.text}` : f.text);
        button.style.left = `${f.left}px`;
        button.style.top = `${f.top}px`;
        button.addEventListener("click", () => showTip(layer, button, f));
        return button;
      }),
    );
  }

  function showTip(layer, button, flag) {
    const tip = layer.nextElementSibling;
    const same = !tip.hidden && tip.dataset.for === button.textContent;
    for (const li of layer.closest("figure").querySelectorAll("ol.markers li.shown")) li.classList.remove("shown");
    tip.hidden = same;
    if (same) return;
    tip.dataset.for = button.textContent;
    tip.textContent = flag.kind === "marker" ? `${flag.number}. ${flag.text}` : flag.text;
    tip.style.top = `${button.offsetTop + FLAG}px`;
    if (flag.item) flag.item.classList.add("shown");
  }

  // Where no sample arrived for much longer than usual (mdboost was not running): break the
  // lines there and flag the restart that ended the gap.
  function gapsIn(progress) {
    const deltas = [];
    for (let i = 1; i < progress.length; i++) deltas.push(progress[i].x - progress[i - 1].x);
    if (deltas.length < 10) return [];
    const usual = deltas.slice().sort((a, b) => a - b)[Math.floor(deltas.length * 0.9)];
    const longest = Math.max(usual * 4, 60_000);
    const gaps = [];
    for (let i = 1; i < progress.length; i++) {
      const from = progress[i - 1].x;
      const to = progress[i].x;
      if (to - from > longest) {
        const text = `No samples from ${localTime(from, true)} to ${localTime(to, true)}: mdboost was not running; it restarted at ${localTime(to, false)}`;
        gaps.push({ from, to, text });
      }
    }
    return gaps;
  }

  function breakAt(data, gaps) {
    for (const gap of gaps.slice().reverse()) {
      const i = data.findIndex((p) => p.x >= gap.to);
      if (i > 0 && data[i - 1].y !== null) data.splice(i, 0, { x: (gap.from + gap.to) / 2, y: null });
    }
  }

  function points(samples) {
    const progress = [];
    const speed = [];
    for (const s of samples) {
      if (s.percent === null) continue;
      const x = s.ts * 1000;
      progress.push({ x, y: s.percent });
      if (s.speed_kb_s !== null) speed.push({ x, y: (s.speed_kb_s * 1024) / 1e6 });
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
    const markers = markersOf(canvas);
    // A finished run's last change (the revert when it ended) comes a tick after its last sample.
    const last = data.progress.length ? data.progress[data.progress.length - 1].x : undefined;
    const end = last === undefined ? undefined : Math.max(last, ...markers.map((m) => m.x));
    return new Chart(canvas, {
      type: "line",
      data: {
        datasets: [
          { label: "Progress (%)", data: data.progress, yAxisID: "progress", borderColor: cssVar("--accent"), backgroundColor: cssVar("--accent"), borderWidth: 2, pointRadius: 0 },
          { label: "Speed (MB/s)", data: data.speed, yAxisID: "speed", borderColor: cssVar("--speed"), backgroundColor: cssVar("--speed"), borderWidth: 1.5, pointRadius: 0, spanGaps: false },
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
            max: end,
            grid: { color: grid },
            afterBuildTicks: timeTicks,
            ticks: { color: fg, autoSkip: false, maxRotation: 0, font: { size: 11 }, callback: timeLabel },
          },
          progress: { position: "left", suggestedMin: 0, suggestedMax: 100, grid: { color: grid }, ticks: { color: fg }, title: { display: true, text: "%", color: fg } },
          speed: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, ticks: { color: fg }, title: { display: true, text: "MB/s", color: fg } },
        },
        plugins: {
          legend: { labels: { color: fg, boxWidth: 12 } },
          tooltip: { callbacks: { title: (items) => (items.length ? localTime(items[0].parsed.x, true) : "") } },
          mdboostMarkers: { color: cssVar("--fg"), gapColor: cssVar("--grid"), markers, gaps: data.gaps },
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
    canvas.hidden = false; // hidden until now: without JavaScript the server's picture shows
    try {
      const samples = await fetchSamples(entry.url);
      entry.lastTs = samples.length ? samples[samples.length - 1].ts : 0;
      const data = points(samples);
      data.gaps = gapsIn(data.progress);
      breakAt(data.progress, data.gaps);
      breakAt(data.speed, data.gaps);
      entry.chart = makeChart(canvas, data);
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

  // The account page's new token: copy it (navigator.clipboard needs HTTPS; a LAN NAS is
  // often plain HTTP, where selecting the field and execCommand still work).
  document.addEventListener("click", async (event) => {
    const button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) return;
    const field = document.getElementById(button.dataset.copy);
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
    } catch {
      document.execCommand("copy");
    }
    button.textContent = "Copied";
  });

  // An answer to a request sent before the one that drew a region, or before one still on its
  // way to it, is older than what the page shows or will show. Seen in CI: the boost panel's
  // poll left, the owner tapped revert, the poll's "boost on" came back first and replaced the
  // panel the revert was aimed at, so the revert's answer went nowhere. Requests are numbered
  // as they leave; a region remembers the newest number aimed at it and the one that drew it.
  let sent = 0;
  let answering = 0; // the number of the answer being swapped in now
  const newest = new Map(); // region id -> newest request number aimed at it or drawing it

  function claim(target, number) {
    if (!target || !target.id) return true;
    if ((newest.get(target.id) || 0) > number) return false;
    newest.set(target.id, number);
    return true;
  }

  // A poll that leaves while a change is on its way may be answered before the change is
  // written: its answer is then the newest and wins over the change's, and a panel drawn from it
  // ("off", nothing measured) polls no more, so it stays wrong. Polls wait for the change's answer.
  let changing = 0;
  function isPoll(elt) {
    const trigger = elt && elt.getAttribute ? elt.getAttribute("hx-trigger") : null;
    return /^\s*every\b/.test(trigger || "");
  }

  document.addEventListener("htmx:beforeRequest", (event) => {
    const { xhr, target, elt, requestConfig } = event.detail;
    if (changing > 0 && isPoll(elt)) {
      event.preventDefault(); // the next one leaves 5 s later, after the change
      return;
    }
    const change = Boolean(requestConfig) && requestConfig.verb !== "get";
    if (change) changing++;
    const number = ++sent;
    claim(target, number);
    // readystatechange comes before load, where htmx swaps, even when the element that sent
    // the request has left the page (its own events then reach no listener here). DONE comes
    // after an error or an abort too, so a change that failed holds no poll back.
    xhr.addEventListener("readystatechange", () => {
      if (xhr.readyState !== XMLHttpRequest.DONE) return;
      answering = number;
      if (change) changing--;
    });
  });

  // htmx swaps nothing when a change gets no answer (a phone's Wi-Fi) or an error status, so a
  // tap on Revert would look ignored: say so beside the button, and let the next tap try again.
  function sayNotDone(event, sentence) {
    const form = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("form");
    const verb = event.detail.requestConfig && event.detail.requestConfig.verb;
    if (!form || !form.isConnected || !verb || verb === "get") return;
    let said = form.querySelector(".not-done");
    if (!said) {
      said = document.createElement("p");
      said.className = "alert not-done";
      said.setAttribute("role", "alert");
      form.prepend(said);
    }
    said.textContent = sentence;
  }

  document.addEventListener("htmx:sendError", (event) =>
    sayNotDone(event, "No answer from mdboost: is the NAS reachable? It may not have been done; try again."),
  );
  document.addEventListener("htmx:responseError", (event) => {
    let sentence = `Not done: mdboost answered ${event.detail.xhr.status}. Try again.`;
    try {
      const body = JSON.parse(event.detail.xhr.responseText);
      const found = body && body.detail && (body.detail.message || body.detail);
      if (typeof found === "string") sentence = `Not done: ${found.replace(/\.?$/, ".")}`;
    } catch {
      // an HTML or empty error page: the status says enough
    }
    sayNotDone(event, sentence);
  });

  for (const name of ["htmx:beforeSwap", "htmx:oobBeforeSwap"]) {
    document.addEventListener(name, (event) => {
      if (event.detail.shouldSwap && !claim(event.detail.target, answering)) event.detail.shouldSwap = false;
    });
  }

  htmx.onLoad(function (root) {
    keepDetails(root);
    localiseTimes(root);
    for (const canvas of within(root, "canvas[data-series]")) buildChart(canvas);
    for (const card of within(root, "article[data-run]")) appendNew(card.dataset.run);
    for (const list of within(root, "ol.markers[id]")) refreshMarkers(list);
  });
})();

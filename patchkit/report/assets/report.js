/* patchkit report: draws the embedded documents (docs/json.md "report") with plotly.js.
 *
 * Everything it shows comes from the documents in the page: `check --json` per
 * manifest, `runs --json`, the run records and the latest `bisect --json`.
 * Nothing is fetched: the documents and plotly.js are inflated in the browser
 * (DecompressionStream) and plotly.js starts from a blob: URL.
 */
"use strict";

(function () {
  // Okabe-Ito: distinguishable with every common colour-vision deficiency; patterns repeat the
  // status for print and for anyone who cannot rely on colour at all.
  const STATUS = {
    APPLY: { color: "#009E73", label: "APPLY: applies here", pattern: "" },
    SKIP: { color: "#56B4E9", label: "SKIP: in place (already applied or provided upstream)", pattern: "" },
    OTHER: { color: "#BBBBBB", label: "SKIP OTHER_VARIANT: another variant carries it", pattern: "." },
    WARN: { color: "#E69F00", label: "WARN: optional patch cannot apply", pattern: "/" },
    FAIL: { color: "#D55E00", label: "FAIL: required patch cannot apply", pattern: "x" },
  };
  const PROFILE_COLORS = ["#0072B2", "#CC79A7", "#009E73", "#E69F00", "#56B4E9", "#D55E00", "#F0E442", "#000000"];
  const OUTCOME_SYMBOL = {
    refused: "x-thin-open", "server-failed": "triangle-down-open", "client-failed": "triangle-up-open",
    "metric-missing": "circle-open", interrupted: "diamond-open",
  };

  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const short = (sha) => String(sha || "").slice(0, 10);
  const num = (v) => (v === null || v === undefined ? "–" : Number(v).toPrecision(4).replace(/\.?0+$/, ""));

  async function inflate(id) {
    const text = $(id).textContent.trim();
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }

  async function startPlotly() {
    const code = await inflate("patchkit-plotly");
    window.patchkitTimings.inflated = Math.round(performance.now());
    const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    await new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = url;
      script.onload = resolve;
      script.onerror = () => reject(new Error("plotly.js did not start"));
      document.head.appendChild(script);
    });
    URL.revokeObjectURL(url);
  }

  function statusKey(item) {
    if (item.status === "SKIP" && item.reason === "OTHER_VARIANT") return "OTHER";
    return item.status;
  }

  function themeColors() {
    const css = getComputedStyle(document.documentElement);
    const v = (name) => css.getPropertyValue(name).trim();
    return { bg: v("--bg"), fg: v("--fg"), grid: v("--grid"), muted: v("--muted"), line: v("--line") };
  }

  function themeLayout() {
    const t = themeColors();
    return {
      paper_bgcolor: t.bg, plot_bgcolor: t.bg, "font.color": t.fg,
      "xaxis.gridcolor": t.grid, "yaxis.gridcolor": t.grid, "xaxis.linecolor": t.line, "yaxis.linecolor": t.line,
      "hoverlabel.bgcolor": t.bg, "hoverlabel.font.color": t.fg, "hoverlabel.bordercolor": t.line,
    };
  }

  function render(data) {
    const { index, check, runs, records, bisect, verdicts } = data;
    const pairOf = new Map(verdicts.pairs.map((p) => [p.metric + "|" + p.profile + "|" + p.commit, p]));
    // Per benchmarked commit, metric and profile: its launch values, their median and the interval of its level.
    const levels = verdicts.levels || [];
    const levelOf = new Map(levels.map((l) => [l.metric + "|" + l.profile + "|" + l.commit, l]));
    const withInterval = levels.find((l) => l.interval);
    const confidence = withInterval ? Math.round(withInterval.interval.confidence * 100) + " %" : "";
    // The commit axis: the checked commits in check's order (oldest first), manifests merged.
    const axis = [];
    const pos = new Map();
    for (const doc of check) {
      for (const c of doc.commits) {
        if (!pos.has(c.commit)) {
          pos.set(c.commit, axis.length);
          axis.push(c);
        }
      }
    }
    const N = axis.length;
    const rowsAt = check.map((doc) => new Map(doc.commits.map((c) => [c.commit, c])));
    const recordById = new Map(records.map((r) => [r.run, r]));
    const runsAt = new Map();
    for (const run of runs.runs) {
      if (!pos.has(run.commit)) continue;
      if (!runsAt.has(run.commit)) runsAt.set(run.commit, []);
      runsAt.get(run.commit).push(run);
    }
    const offAxis = runs.runs.filter((r) => !pos.has(r.commit)).length;

    // Per-patch status at a commit, compact: per manifest, patch ids grouped by status and reason.
    const statusCache = new Map();
    function statusLines(sha) {
      const lines = [];
      check.forEach((doc, d) => {
        const row = rowsAt[d].get(sha);
        if (!row) return;
        const key = d + "|" + row.results.map((r) => r.status + r.reason).join(",") + "|" +
          row.groups.map((g) => g.status + g.reason).join(",");
        let text = statusCache.get(key);
        if (text === undefined) {
          const by = new Map();
          for (const r of row.results) {
            const k = r.status + (r.reason ? " " + r.reason : "");
            if (!by.has(k)) by.set(k, []);
            by.get(k).push(r.patch);
          }
          for (const g of row.groups) {
            const k = r_key(g);
            if (!by.has(k)) by.set(k, []);
            by.get(k).push("group " + g.group);
          }
          text = "<b>" + esc(doc.manifest.name) + "</b>: " +
            [...by.entries()].map(([k, ids]) => esc(k) + " " + esc(ids.join(", "))).join("; ");
          statusCache.set(key, text);
        }
        lines.push(text);
      });
      return lines;
    }
    function r_key(g) { return g.status + (g.reason ? " " + g.reason : ""); }

    function commitHead(c) {
      return "<b>" + esc(short(c.commit)) + "</b> " + esc(c.subject) + "<br>" + esc(c.date) + " · " + esc(c.author || "");
    }

    // x ticks: short shas at about 8 evenly spaced commits of the visible range.
    function ticks(range) {
      const lo = Math.max(0, Math.ceil(range ? range[0] : 0));
      const hi = Math.min(N - 1, Math.floor(range ? range[1] : N - 1));
      const span = Math.max(1, hi - lo);
      const step = Math.max(1, Math.round(span / 8));
      const vals = [];
      for (let i = lo; i <= hi; i += step) vals.push(i);
      return { "xaxis.tickvals": vals, "xaxis.ticktext": vals.map((i) => axis[i].commit.slice(0, 7)) };
    }

    const figures = [];
    const firstBad = bisect && bisect.first_bad && pos.has(bisect.first_bad.commit) ? bisect.first_bad : null;
    const badShapes = firstBad ? [{
      type: "line", xref: "x", yref: "paper", x0: pos.get(firstBad.commit), x1: pos.get(firstBad.commit), y0: 0, y1: 1,
      line: { color: "#D55E00", width: 2, dash: "dash" },
    }] : [];
    // Every figure gets the same left margin, wide enough for the longest band label, so that one commit
    // sits at one horizontal position in every panel.
    const labels = check.flatMap((doc) => doc.commits.length
      ? [...doc.commits[0].results.map((r) => doc.manifest.name + " · " + r.patch), ...doc.commits[0].groups.map((g) => doc.manifest.name + " · group " + g.group)]
      : []);
    const left = Math.max(90, 12 + 6.6 * Math.max(0, ...labels.map((l) => l.length)));
    const baseLayout = (height) => ({
      height, margin: { l: left, r: 20, t: 10, b: 40 }, showlegend: true,
      legend: { orientation: "h", y: -0.25 }, dragmode: "zoom",
      xaxis: {
        range: [-0.5, N - 0.5], tickmode: "array", zeroline: false, automargin: true,
        tickvals: ticks(null)["xaxis.tickvals"], ticktext: ticks(null)["xaxis.ticktext"],
      },
      shapes: badShapes.slice(),
    });

    // --- the bands -------------------------------------------------------------------------
    const bandTraces = [];
    const rowNames = [];
    check.forEach((doc) => {
      const name = doc.manifest.name;
      const patches = doc.commits.length ? doc.commits[0].results.map((r) => r.patch) : [];
      const groups = doc.commits.length ? doc.commits[0].groups.map((g) => g.group) : [];
      const rows = [
        ...patches.map((p) => ({ label: name + " · " + p, windows: doc.windows.filter((w) => w.patch === p), kind: "patch", id: p })),
        ...groups.map((g) => ({ label: name + " · group " + g, windows: doc.group_windows.filter((w) => w.group === g), kind: "group", id: g })),
      ];
      for (const row of rows) {
        rowNames.push(row.label);
        const start = row.windows.map((w) => pos.get(w.first));
        const count = row.windows.map((w, i) => pos.get(w.last) - start[i] + 1);
        bandTraces.push({
          type: "bar", orientation: "h", name: row.label, showlegend: false,
          y: row.windows.map(() => row.label), base: start.map((s) => s - 0.5), x: count,
          marker: {
            color: row.windows.map((w) => STATUS[statusKey(w)].color),
            pattern: { shape: row.windows.map((w) => STATUS[statusKey(w)].pattern), fillmode: "overlay", fgcolor: "#000000", fgopacity: 0.3, size: 7 },
            line: { width: 0 },
          },
          hoverinfo: "skip", width: 0.8,
          meta: { manifest: name, kind: row.kind, id: row.id },
        });
      }
    });
    const hoverText = axis.map((c) => {
      const lines = [commitHead(c), ...statusLines(c.commit)];
      for (const run of runsAt.get(c.commit) || []) {
        const medians = Object.entries(run.stats).map(([m, s]) => m + "=" + num(s.median)).join(", ");
        lines.push("run " + run.run + " " + esc(run.profile) + " " + esc(run.outcome) + (medians ? ": " + esc(medians) : run.reason ? ": " + esc(run.reason) : ""));
      }
      lines.push("<i>click to copy the sha</i>");
      return lines.join("<br>");
    });
    bandTraces.push({
      type: "scatter", name: "commits", showlegend: false,
      x: axis.map((_, i) => i), y: axis.map(() => rowNames[0]), customdata: axis.map((c) => c.commit),
      // One invisible line, not 5,000 invisible markers: hover still finds every commit (hovermode "x").
      mode: "lines", line: { width: 0, color: "rgba(0,0,0,0)" }, hovertext: hoverText, hovertemplate: "%{hovertext}<extra></extra>",
    });
    const bandsLayout = baseLayout(Math.max(160, 60 + rowNames.length * 26));
    bandsLayout.hovermode = "x";
    bandsLayout.yaxis = { autorange: "reversed", automargin: false, type: "category", categoryorder: "array", categoryarray: rowNames, fixedrange: true };
    bandsLayout.showlegend = false;
    bandsLayout.bargap = 0.2;
    if (firstBad) {
      bandsLayout.annotations = [{ x: pos.get(firstBad.commit), xref: "x", y: 1, yref: "paper", yanchor: "bottom", showarrow: false,
        text: "first bad (latest bisect, " + esc(bisect.metric) + "): " + esc(short(firstBad.commit)), font: { color: "#D55E00" } }];
      bandsLayout.margin.t = 24;
    }
    $("legend").innerHTML = Object.values(STATUS).map((s) => '<span style="--swatch:' + s.color + '">' + esc(s.label) + "</span>").join("");
    figures.push({ el: $("bands"), traces: bandTraces, layout: bandsLayout });

    // --- one panel per metric --------------------------------------------------------------
    const profiles = [...new Set(records.map((r) => r.profile))];
    const colorOf = (p) => PROFILE_COLORS[profiles.indexOf(p) % PROFILE_COLORS.length];
    const byPos = (a, b) => pos.get(a.commit.sha) - pos.get(b.commit.sha) || a.run - b.run;
    const onAxis = records.filter((r) => pos.has(r.commit.sha)).sort(byPos);

    function provenance(r) {
      const lines = [];
      const pk = (r.interpreter && r.interpreter.packages) || {};
      const versions = Object.entries(pk).filter(([, v]) => v).map(([k, v]) => k + " " + v);
      if (r.server_info && r.server_info.version) versions.push("server " + r.server_info.version);
      if (r.torch && r.torch.cuda) versions.push("CUDA " + r.torch.cuda);
      if (r.torch && r.torch.nccl) versions.push("NCCL " + r.torch.nccl);
      lines.push("versions: " + (versions.length ? esc(versions.join(", ")) : "–"));
      if (r.gpus && r.gpus.length) {
        const g = r.gpus[0];
        lines.push("GPU: " + r.gpus.length + "× " + esc(g.name) + ", driver " + esc(g.driver_version) + ", " + esc(g.pstate || ""));
      } else lines.push("GPU: none recorded");
      lines.push("host: " + esc((r.host && r.host.hostname) || "–"));
      return lines;
    }
    function envOf(r) {
      const tree = r.commands && r.commands.cwd;
      const out = {};
      for (const [k, v] of Object.entries(r.env || {})) out[k] = tree ? String(v).split(tree).join("{tree}") : String(v);
      return out;
    }
    const previousOf = new Map();
    for (const profile of profiles) {
      let prev = null;
      for (const r of onAxis.filter((x) => x.profile === profile && x.outcome === "ok")) {
        previousOf.set(r.run, prev);
        prev = r;
      }
    }
    function envDiff(r) {
      const prev = previousOf.get(r.run);
      if (!prev) return "env: the first ok run of " + esc(r.profile) + " on this axis";
      const a = envOf(prev), b = envOf(r);
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
      const diffs = keys.filter((k) => a[k] !== b[k]).map((k) => (k in a ? (k in b ? k + " " + a[k] + " → " + b[k] : "−" + k) : "+" + k + "=" + b[k]));
      return "env vs run " + prev.run + ": " + (diffs.length ? esc(diffs.join(", ")) : "no difference");
    }
    function runHover(r, metric) {
      const s = (r.stats || {})[metric];
      const c = axis[pos.get(r.commit.sha)];
      const lines = [commitHead(c), "<b>run " + r.run + "</b> " + esc(r.profile) + " · " + esc(r.outcome) + (r.reason ? ": " + esc(r.reason) : "")];
      if (s) lines.push(esc(metric) + ": median " + num(s.median) + " (min " + num(s.min) + ", max " + num(s.max) + ", n " + s.n + (s.missing ? ", missing " + s.missing : "") + ")");
      const pair = pairOf.get(metric + "|" + r.profile + "|" + r.commit.sha);
      if (pair) lines.push(verdictLine(pair));
      lines.push(...provenance(r), envDiff(r), ...statusLines(r.commit.sha), "<i>click to copy the sha</i>");
      return lines.join("<br>");
    }
    function intervalLine(l) {
      const iv = l.interval;
      if (!iv) return "interval: unknown with one launch and no noise prior (bench the commit again with --launches, or run patchkit noise)";
      const prior = iv.prior_used ? ", noise prior " + num(l.noise.sigma * 100) + " % pooled in" : "";
      return Math.round(iv.confidence * 100) + " % interval of its level [" + num(iv.low) + ", " + num(iv.high) + "] (geometric mean " +
        num(iv.center) + prior + ")";
    }
    function levelHover(l, metric) {
      const c = axis[pos.get(l.commit)];
      const n = l.launches.length;
      const lines = [commitHead(c),
        "<b>" + esc(l.profile) + " · " + esc(metric) + "</b>: median " + num(l.median) + " of " + n + (n === 1 ? " launch" : " launches") +
          " (runs " + esc(l.runs.join(", ")) + ": " + esc(l.launches.map(num).join(", ")) + ")",
        intervalLine(l)];
      const pair = pairOf.get(metric + "|" + l.profile + "|" + l.commit);
      if (pair) lines.push(verdictLine(pair));
      lines.push(...statusLines(l.commit), "<i>click to copy the sha</i>");
      return lines.join("<br>");
    }
    function verdictLine(pair) {
      const head = "vs previous benchmarked commit " + esc(short(pair.previous)) + " (launches " + pair.runs_a.length + " vs " + pair.runs_b.length + "): ";
      const v = pair.verdict;
      if (!v) return head + "no verdict: one launch on a side and no noise prior (bench both commits again with --launches, or run patchkit noise)";
      const interval = v.ratio === null ? "" : "ratio " + num(v.ratio) + " [" + num(v.low) + ", " + num(v.high) + "] at " + Math.round(v.confidence * 100) + " %, ";
      const more = v.verdict === "unknown" && v.launches_needed ? ", about " + v.launches_needed + " launches per side would decide" : "";
      const prior = v.prior_used ? " (noise prior " + num(pair.noise.sigma * 100) + " %)" : "";
      return head + interval + "<b>" + esc(v.verdict.toUpperCase()) + "</b>" + (v.direction ? " (" + esc(v.direction) + ")" : "") + more + prior;
    }

    const metricsEl = $("metrics");
    for (const metric of index.metrics) {
      const traces = [];
      const spec = records.flatMap((r) => r.metrics || []).find((m) => m.name === metric) || {};
      for (const profile of profiles) {
        const here = levels.filter((l) => l.metric === metric && l.profile === profile && pos.has(l.commit));
        if (!here.length) continue;
        const color = colorOf(profile);
        // One point per server launch (its median over its measured client runs), spread a little around
        // its commit when there are several.
        const px = [], py = [], ptext = [], psha = [];
        for (const l of here) {
          const k = l.launches.length;
          l.launches.forEach((v, i) => {
            const r = recordById.get(l.runs[i]);
            px.push(pos.get(l.commit) + (k > 1 ? (i / (k - 1) - 0.5) * 0.3 : 0));
            py.push(v);
            ptext.push((r ? runHover(r, metric) : commitHead(axis[pos.get(l.commit)])) + "<br>launch value (the run's median): " + num(v));
            psha.push(l.commit);
          });
        }
        traces.push({
          type: "scatter", mode: "markers", name: profile + " launches", legendgroup: profile,
          x: px, y: py, customdata: psha, hovertext: ptext, hovertemplate: "%{hovertext}<extra></extra>",
          marker: { color, size: 6, opacity: 0.6 },
        });
        // One point per benchmarked commit: the median of its launches, with the interval of its level
        // (verdict.level: none with one launch and no noise prior).
        const up = (l) => (l.interval ? Math.max(0, l.interval.high - l.median) : NaN);
        const down = (l) => (l.interval ? Math.max(0, l.median - l.interval.low) : NaN);
        traces.push({
          type: "scatter", mode: "lines+markers", name: profile + " median (interval)", legendgroup: profile,
          x: here.map((l) => pos.get(l.commit)), y: here.map((l) => l.median),
          customdata: here.map((l) => l.commit), hovertext: here.map((l) => levelHover(l, metric)),
          hovertemplate: "%{hovertext}<extra></extra>",
          error_y: { type: "data", symmetric: false, color, thickness: 1.5, width: 5, array: here.map(up), arrayminus: here.map(down) },
          line: { color, width: 1.5 }, marker: { color, size: 10, symbol: "line-ew-open", line: { width: 2.5, color } },
        });
      }
      // `different` verdicts against the previous benchmarked commit: a star on the commit, green when better.
      const different = verdicts.pairs.filter((p) => p.metric === metric && p.verdict && p.verdict.verdict === "different" && pos.has(p.commit));
      if (different.length) {
        const better = (p) => (spec.better === "lower") === (p.verdict.direction === "lower");
        const level = (p) => levelOf.get(p.metric + "|" + p.profile + "|" + p.commit).median;
        traces.push({
          type: "scatter", mode: "markers", name: "different", x: different.map((p) => pos.get(p.commit)), y: different.map(level),
          customdata: different.map((p) => p.commit),
          hovertext: different.map((p) => commitHead(axis[pos.get(p.commit)]) + "<br>" + esc(p.profile) + " " + esc(metric) + ": " + verdictLine(p)),
          hovertemplate: "%{hovertext}<extra></extra>",
          marker: { symbol: different.map((p) => (better(p) ? "star-triangle-up" : "star-triangle-down")), size: 16,
            color: different.map((p) => (better(p) ? "#009E73" : "#D55E00")), line: { width: 1, color: "#000000" } },
        });
      }
      // Runs that measured nothing (refused, failed, interrupted): a mark at the bottom, with the reason.
      const notOk = onAxis.filter((r) => r.outcome !== "ok" && (!spec.profiles || !spec.profiles.length || spec.profiles.includes(r.profile)));
      for (const outcome of [...new Set(notOk.map((r) => r.outcome))]) {
        const these = notOk.filter((r) => r.outcome === outcome);
        traces.push({
          type: "scatter", mode: "markers", name: outcome, yaxis: "y2",
          x: these.map((r) => pos.get(r.commit.sha)), y: these.map(() => 0.06), customdata: these.map((r) => r.commit.sha),
          hovertext: these.map((r) => runHover(r, metric)), hovertemplate: "%{hovertext}<extra></extra>",
          marker: { symbol: OUTCOME_SYMBOL[outcome] || "x-open", size: 11, color: outcome === "refused" ? "#D55E00" : "#E69F00", line: { width: 2 } },
        });
      }
      const panel = document.createElement("section");
      panel.className = "panel";
      panel.dataset.metric = metric;
      const unit = spec.unit ? " (" + spec.unit + ")" : "";
      const better = spec.better ? ", " + spec.better + " is better" : "";
      panel.innerHTML = "<h2>" + esc(metric + unit) + "</h2><p class=\"caption\">From <code>patchkit runs --json</code> and the run records: dots are server launches (each run's median over its measured client runs); the line joins each benchmarked commit's median over its launches, with the " + esc(confidence || "confidence") + " interval of its level as error bars" + esc(better) + "; stars are <code>different</code> verdicts against the previous benchmarked commit (green: better); marks at the bottom are runs that measured nothing, with their reason on hover.</p>";
      const div = document.createElement("div");
      div.className = "figure";
      panel.appendChild(div);
      metricsEl.appendChild(panel);
      const layout = baseLayout(300);
      layout.hovermode = "closest";
      layout.yaxis = { automargin: false, title: { text: esc(metric + unit), standoff: 6 }, zeroline: false };
      layout.yaxis2 = { overlaying: "y", range: [0, 1], visible: false, fixedrange: true };
      if (!traces.length) {
        layout.annotations = [{ text: "no stored run of this metric on this axis", xref: "paper", yref: "paper", x: 0.5, y: 0.5, showarrow: false }];
      }
      figures.push({ el: div, traces, layout });
    }

    // --- summary ----------------------------------------------------------------------------
    // A manifest's `last_good` is where its patches apply (check's "last commit where the whole manifest applies"),
    // not a benchmark's verdict: beside a bisect's "first bad" the words "last good" read as the commit before it.
    const manifests = check.map((doc) => esc(doc.manifest.name) + (doc.last_good
      ? " (the newest commit where every required patch applies: " + esc(short(doc.last_good.commit)) + ")"
      : " (no commit here where every required patch applies)")).join(", ");
    const first = N ? short(axis[0].commit) : "–", last = N ? short(axis[N - 1].commit) : "–";
    $("summary").innerHTML = N + " commits, " + esc(first) + " .. " + esc(last) + "; manifests " + manifests + "; " +
      runs.runs.length + " stored runs" + (offAxis ? " (" + offAxis + " of commits outside this axis, not drawn)" : "") +
      (firstBad ? "; latest bisect of " + esc(bisect.metric) + ": first bad commit " + esc(short(firstBad.commit)) + " " + esc(firstBad.subject) : "") +
      ". Generated " + esc(index.generated_at) + " by patchkit " + esc(index.patchkit) + ", plotly.js " + esc(index.plotly) + ".";
    const judged = verdicts.pairs.filter((p) => p.verdict).length;
    const measured = levels.filter((l) => l.interval).length;
    $("notes").textContent = "Error bars: per benchmarked commit, the interval of its level from its launches (patchkit/bench/stats/verdict.py, the rule compare uses: " +
      "Student's t over the launches, with the noise prior of patchkit noise pooled in when a commit has few); " + measured + " of " + levels.length +
      " commit levels have one, the others have one launch and no noise prior. Verdicts: each benchmarked commit against the previous one " +
      "(same profile and metric), every ok run one server launch, judged at a " + Math.round(verdicts.threshold * 100) + " % threshold; " +
      judged + " of " + verdicts.pairs.length + " pairs were judged (two launches a side or more, or a noise prior); the others need the commits benched again.";
    return { figures, ticks, N };
  }

  function toast(text) {
    const el = $("toast");
    el.textContent = text;
    el.classList.add("shown");
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => el.classList.remove("shown"), 1800);
  }

  function copy(sha) {
    document.body.dataset.copied = sha;
    const done = () => toast("copied " + sha);
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(sha).then(done, () => fallbackCopy(sha, done));
    } else fallbackCopy(sha, done);
  }

  function fallbackCopy(sha, done) {
    const area = document.createElement("textarea");
    area.value = sha;
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (e) { /* the sha is still shown */ }
    area.remove();
    done();
  }

  async function plotAll(view) {
    const theme = themeLayout();
    for (const f of view.figures) {
      const layout = structuredClone(f.layout);
      for (const [path, value] of Object.entries(theme)) {
        const keys = path.split(".");
        let node = layout;
        for (const k of keys.slice(0, -1)) node = node[k] = node[k] || {};
        node[keys[keys.length - 1]] = value;
      }
      await Plotly.newPlot(f.el, f.traces, layout, { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d", "toImage"] });
    }
    let syncing = false;
    for (const f of view.figures) {
      f.el.on("plotly_click", (ev) => {
        const p = ev && ev.points && ev.points[0];
        if (p && typeof p.customdata === "string") copy(p.customdata);
      });
      f.el.on("plotly_relayout", async (ev) => {
        if (syncing) return;
        let range;
        if (ev["xaxis.autorange"]) range = [-0.5, view.N - 0.5];
        else if ("xaxis.range[0]" in ev) range = [ev["xaxis.range[0]"], ev["xaxis.range[1]"]];
        else if (Array.isArray(ev["xaxis.range"])) range = ev["xaxis.range"];
        else return;
        syncing = true;
        try {
          for (const g of view.figures) await Plotly.relayout(g.el, { "xaxis.range": range, ...view.ticks(range) });
        } finally {
          syncing = false;
        }
      });
    }
  }

  function setupTheme(view) {
    const modes = ["auto", "light", "dark"];
    const button = $("theme");
    const apply = () => view.figures.forEach((f) => Plotly.relayout(f.el, themeLayout()));
    button.addEventListener("click", () => {
      const now = document.documentElement.dataset.theme || "auto";
      const next = modes[(modes.indexOf(now) + 1) % modes.length];
      if (next === "auto") delete document.documentElement.dataset.theme;
      else document.documentElement.dataset.theme = next;
      button.textContent = "theme: " + next;
      apply();
    });
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", apply);
  }

  async function main() {
    const timings = (window.patchkitTimings = {});
    const mark = (name) => { timings[name] = Math.round(performance.now()); };
    const index = JSON.parse($("patchkit-report").textContent);
    await startPlotly();
    mark("plotly");
    const docs = index.documents;
    const check = [];
    for (const id of docs.check) check.push(JSON.parse(await inflate(id)));
    const data = {
      index, check,
      runs: JSON.parse(await inflate(docs.runs)),
      records: JSON.parse(await inflate(docs.records)).runs,
      bisect: docs.bisect ? JSON.parse(await inflate(docs.bisect)) : null,
      verdicts: JSON.parse(await inflate(docs.verdicts)),
    };
    window.patchkitReport = data;
    mark("documents");
    const view = render(data);
    mark("render");
    await plotAll(view);
    mark("plotted");
    setupTheme(view);
    document.body.dataset.ready = "yes";
  }

  main().catch((err) => {
    const el = $("summary");
    el.className = "error";
    el.textContent = "The report could not be drawn: " + (err && err.message ? err.message : err);
    document.body.dataset.ready = "error";
    console.error(err);
  });
})();

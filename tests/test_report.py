"""patchkit report: the page's embedded documents, checked against the commands, and the page in a real Chromium.

The store holds real runs of the stand-in server over the demo history
(report_helpers.demo_bench).  The browser tests drive Debian's ``chromium``
with selenium and ``chromedriver`` from ``chromium-driver`` (.ci/run installs
both); where it cannot start they skip, saying why.  A second page, over a
generated history of 5,000 commits with made-up runs
(report_helpers.long_history), is loaded at 1,280 pixels: it must draw, keep
its ticks few and apart, and zoom to commits one can point at.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from helpers import run_script
from report_helpers import RANGES, DemoBench, LongHistory, demo_bench, embedded, long_history

from patchkit.bench.stats.verdict import level

pytestmark = pytest.mark.slow  # every test here takes seconds: left out of `pytest -m "not slow"`

MAX_BYTES = 5_000_000


def hover_bands(browser) -> str:
    """Move the pointer to the middle of the patch bands; the hover text plotly shows (up to 5 s), or ''."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).move_to_element(browser.find_element("css selector", "#bands .nsewdrag")).perform()
    deadline = time.monotonic() + 5
    text = ""
    while time.monotonic() < deadline and not text:
        text = browser.execute_script(
            "const h = document.querySelector('#bands .hoverlayer .hovertext'); return h ? h.textContent : ''"
        )
        time.sleep(0.1)
    return text


def artifact(tmp_path: Path, name: str) -> Path:
    """Where a screenshot is kept: the test's tmp dir, or ``$PATCHKIT_TEST_ARTIFACTS`` when set (pytest keeps
    only its last three tmp dirs, and CI may want to collect them)."""
    folder = Path(os.environ.get("PATCHKIT_TEST_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> DemoBench:
    return demo_bench(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def page(demo, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("page") / "report.html"
    # check's JSON counts cache hits and misses: warm the cache first, so that the page's copy and a later
    # `check --json` are of the same state, byte for byte.
    check_json(demo, demo.kimi)
    check_json(demo, demo.timing)
    ranges = [arg for r in RANGES for arg in ("--range", r)]
    result = run_script(
        "report", "-m", demo.kimi, "-m", demo.timing, "--repo", demo.repo, *ranges, "--store", demo.store, "-o", out
    )
    assert result.code == 0, result.err
    assert result.out.startswith(f"wrote {out} (") and "2 manifests" in result.out and result.err == ""
    return out


def check_json(demo: DemoBench, manifest: Path) -> bytes:
    ranges = [arg for r in RANGES for arg in ("--range", r)]
    result = run_script("check", "-m", manifest, "--repo", demo.repo, *ranges, "--json")
    assert result.code in (0, 1), result.err
    return result.out.encode("utf-8")


def runs_json(demo: DemoBench) -> bytes:
    result = run_script("runs", "--repo", demo.repo, "--store", demo.store, "--json")
    assert result.code == 0, result.err
    return result.out.encode("utf-8")


# -- the file --------------------------------------------------------------------------------------


def test_embedded_documents_are_the_commands_json_byte_for_byte(demo, page):
    html = page.read_text(encoding="utf-8")
    index, blobs = embedded(html)
    assert index["command"] == "report" and index["version"] == 1
    assert index["manifests"] == ["kimi-k25-eagle3", "eagle3-verify-timing"]
    assert index["metrics"] == ["output_tok_s", "verify_ms"]
    docs = index["documents"]
    assert [blobs[e] for e in docs["check"]] == [check_json(demo, demo.kimi), check_json(demo, demo.timing)]
    assert blobs[docs["runs"]] == runs_json(demo)
    assert json.loads(blobs[docs["bisect"]]) == demo.bisect  # what `bisect --json` printed
    verdicts = json.loads(blobs[docs["verdicts"]])
    first_bad = demo.bisect["first_bad"]["commit"]
    judged = {(p["metric"], p["profile"], p["commit"]): p["verdict"] for p in verdicts["pairs"] if p["verdict"]}
    # The first bad commit against its parent (two launches each, at least): different, the way it went;
    # every other judged pair (the bisect's own extra launches) is not.
    assert judged[("output_tok_s", "eagle3", first_bad)]["verdict"] == "different"
    assert judged[("output_tok_s", "eagle3", first_bad)]["direction"] == "lower"
    assert judged[("verify_ms", "eagle3", first_bad)]["verdict"] == "different"
    assert judged[("verify_ms", "eagle3", first_bad)]["direction"] == "higher"
    different = sorted(k for k, v in judged.items() if v["verdict"] == "different")
    assert different == [("output_tok_s", "eagle3", first_bad), ("verify_ms", "eagle3", first_bad)]
    unjudged = [p for p in verdicts["pairs"] if p["verdict"] is None]
    assert all(min(len(p["runs_a"]), len(p["runs_b"])) == 1 and p["noise"] is None for p in unjudged)
    # Per benchmarked commit, metric and profile: its launches (each ok run's median, as `runs --json` has it),
    # their median, and the interval of its level by the verdict's rule (none with one launch and no prior).
    launches: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for run in json.loads(runs_json(demo))["runs"]:
        for metric, stats in run["stats"].items() if run["outcome"] == "ok" else ():
            launches.setdefault((metric, run["profile"], run["commit"]), []).append((run["run"], stats["median"]))
    levels = {(lv["metric"], lv["profile"], lv["commit"]): lv for lv in verdicts["levels"]}
    assert set(levels) == set(launches) and len(levels) == 10
    for key, found in levels.items():
        assert found["runs"] == [run for run, _ in launches[key]]
        assert found["launches"] == [value for _, value in launches[key]]
        assert found["median"] == statistics.median(found["launches"]) and found["noise"] is None
        if len(found["launches"]) == 1:
            assert found["interval"] is None
        else:  # the stand-in is deterministic: its launches agree, so the interval is the values' resolution
            assert found["interval"] == level(found["launches"]).as_json()
            low, high = found["interval"]["low"], found["interval"]["high"]
            assert low < found["median"] < high  # never a zero-width interval
    assert sum(len(lv["launches"]) > 1 for lv in levels.values()) == 8
    records = json.loads(blobs[docs["records"]])["runs"]
    assert [r["run"] for r in records] == [r["run"] for r in json.loads(runs_json(demo))["runs"]]
    assert {r["outcome"] for r in records} == {"ok", "refused"}
    # One file, nothing to fetch: no external script, style or link, a policy that forbids any request.
    assert "<script src" not in html and "<link" not in html and "http://" not in html.split("<script")[0]
    assert "default-src 'none'" in html and "connect-src 'none'" in html
    assert len(page.read_bytes()) < MAX_BYTES


def test_bisect_keeps_its_answer_beside_the_store(demo):
    kept = demo.store.with_suffix(".bisect.json")
    assert json.loads(kept.read_text(encoding="utf-8")) == demo.bisect
    assert demo.bisect["first_bad"]["subject"] == "Fix PCG MoE Error (#17739)"


def test_unknown_metric_and_bad_output_are_one_line_errors(demo, tmp_path):
    common = ["report", "-m", demo.kimi, "--repo", demo.repo, "--range", RANGES[0], "--store", demo.store]
    bad = run_script(*common, "--metric", "tok_s", "-o", tmp_path / "r.html")
    assert bad.code == 2 and bad.err.count("\n") == 1 and "Traceback" not in bad.err
    assert "--metric tok_s: no stored run has this metric" in bad.err and "output_tok_s, verify_ms" in bad.err
    assert not (tmp_path / "r.html").exists()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the output's directory should be\n")
    denied = run_script(*common, "-o", blocker / "r.html")
    assert denied.code == 2 and "Traceback" not in denied.err, denied.err
    assert f"patchkit: error: -o {blocker / 'r.html'}: {blocker} is a file, not a directory" in denied.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-dir"]  # no temp file left


TRACE_ORDER = """
import json, sys
import patchkit.manifest
from patchkit.git import Repo
from patchkit.cli import main

events = []
spawn_rev_list, load_manifest = Repo.spawn_rev_list, patchkit.manifest.load_manifest

def traced_rev_list(self, *args, **kwargs):
    events.append("git lists the range")
    return spawn_rev_list(self, *args, **kwargs)

def traced_load(spec, *args, **kwargs):
    events.append("load " + ("with" if kwargs.get("valid_cache") else "without") + " the schema cache")
    return load_manifest(spec, *args, **kwargs)

Repo.spawn_rev_list, patchkit.manifest.load_manifest = traced_rev_list, traced_load
code = main(sys.argv[1:])
print(json.dumps({"code": code, "events": events}))
"""


def test_report_checks_each_manifest_as_check_does_and_caches_under_paths(demo, tmp_path):
    # Through RangeCheck, per manifest: git lists the range before the manifests load, and the manifests'
    # schema verdict is remembered (paths.schema_checked), as `check` does; plotly.js is cached where
    # paths.report_cache says.
    from patchkit import paths
    from patchkit.git import Repo

    argv = [
        "report", "-m", str(demo.kimi), "-m", str(demo.timing), "--repo", str(demo.repo), "--range", RANGES[0],
        "--store", str(demo.store), "-o", str(tmp_path / "r.html"),
    ]  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", TRACE_ORDER, *argv], capture_output=True, text=True, check=True)
    traced = json.loads(proc.stdout.splitlines()[-1])
    assert traced["code"] == 0, proc.stderr
    assert traced["events"] == ["git lists the range"] * 2 + ["load with the schema cache"] * 2
    common = Repo.discover(demo.repo).common_dir
    assert [p.name.split("-")[0] for p in paths.report_cache(common).iterdir()] == ["plotly"]


def test_a_bad_second_manifest_is_reported_before_a_bad_repository(demo, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('schema = 1\nname = "bad"\n[[patch]]\nid = "x"\n', encoding="utf-8")
    result = run_script(
        "report", "-m", demo.kimi, "-m", bad, "--repo", tmp_path, "--range", RANGES[0], "-o", tmp_path / "r.html"
    )
    assert result.code == 2 and "Traceback" not in result.err, result.err
    assert "bad.toml:3: patch[1].op: missing required key 'op'" in result.err, result.err
    alone = run_script("report", "-m", demo.kimi, "--repo", tmp_path, "--range", RANGES[0], "-o", tmp_path / "r.html")
    assert alone.code == 2 and "not a git repository" in alone.err, alone.err


def test_a_report_over_an_empty_store_still_draws_the_bands(demo, tmp_path):
    out = tmp_path / "empty.html"
    result = run_script(
        "report", "-m", demo.kimi, "--repo", demo.repo, "--range", RANGES[0], "--store", tmp_path / "none.sqlite",
        "-o", out,
    )  # fmt: skip
    assert result.code == 0, result.err
    index, blobs = embedded(out.read_text(encoding="utf-8"))
    assert index["metrics"] == [] and "bisect" not in index["documents"]
    assert json.loads(blobs[index["documents"]["runs"]])["runs"] == []


# -- in Chromium -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip("no chromium/chromedriver on PATH: apt-get install chromium chromium-driver (.ci/run does)")
    try:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed: pip install -e '.[test]'")
    options = Options()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        chrome = webdriver.Chrome(service=Service(driver), options=options)
    except WebDriverException as exc:
        pytest.skip(f"chromium could not start: {(exc.msg or str(exc)).splitlines()[0]}")
    yield chrome
    chrome.quit()


def load(browser, path: Path) -> dict[str, Any]:
    """Open the file, wait until the page says it is drawn; its console messages and network requests."""
    browser.get_log("browser")
    browser.get_log("performance")
    browser.get(path.as_uri())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not browser.execute_script("return document.body.dataset.ready || ''"):
        time.sleep(0.1)
    requests = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requests.append(message["params"]["request"]["url"])
    return {
        "ready": browser.execute_script("return document.body.dataset.ready || ''"),
        "console": [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")],
        "requests": requests,
    }


def fetched(requests: list[str]) -> list[str]:
    """Requests that leave the page: anything but the file itself and the blob: plotly.js starts from."""
    return [url for url in requests if not url.startswith(("file:", "blob:", "data:"))]


def test_the_network_probe_sees_a_request(browser, tmp_path):
    # The probe below must be able to fail: a page that loads an image from the loopback is seen doing it.
    probe = tmp_path / "probe.html"
    probe.write_text('<!doctype html><body data-ready="yes"><img src="http://127.0.0.1:9/x.png"></body>')
    seen = load(browser, probe)
    assert fetched(seen["requests"]) == ["http://127.0.0.1:9/x.png"]
    assert seen["console"]  # the failed load is a console error


@pytest.fixture(scope="module")
def shown(browser, page) -> dict[str, Any]:
    """The report, loaded once (plotly.js compiles in seconds on a busy machine); the tests below read it in turn."""
    return load(browser, page)


def test_page_loads_offline_with_no_console_error(browser, page, shown):
    seen = shown
    assert seen["ready"] == "yes", browser.find_element("id", "summary").text
    assert seen["console"] == []
    assert fetched(seen["requests"]) == []
    assert seen["requests"][0] == page.as_uri()


def test_the_summary_names_where_the_manifest_applies_apart_from_the_first_bad_commit(browser, shown, demo):
    """#47 item 14: `last good: X` (where the manifest applies) beside the bisect's `first bad Y`, X being the
    bisect's BAD commit, read as a contradiction: it is named for what it is."""
    assert shown["ready"] == "yes"
    summary = browser.find_element("id", "summary").text
    assert "last good" not in summary, summary
    for manifest in (demo.kimi, demo.timing):
        check = json.loads(check_json(demo, manifest))
        name, newest = check["manifest"]["name"], check["last_good"]
        said = f"the newest commit where every required patch applies: {newest['commit'][:10]}" if newest else None
        assert f"{name} ({said or 'no commit here where every required patch applies'})" in summary, summary
    first_bad = demo.bisect["first_bad"]
    assert f"latest bisect of {demo.bisect['metric']}: first bad commit {first_bad['commit'][:10]}" in summary


def test_dom_has_a_band_per_patch_a_panel_per_metric_and_marks_for_refused_runs(browser, shown, demo, tmp_path):
    assert shown["ready"] == "yes"
    checks = [json.loads(check_json(demo, m)) for m in (demo.kimi, demo.timing)]
    rows = [f"{c['manifest']['name']} · {r['patch']}" for c in checks for r in c["commits"][0]["results"]]
    rows += [f"{c['manifest']['name']} · group {g['group']}" for c in checks for g in c["commits"][0]["groups"]]
    dom = browser.execute_script(
        """
        const name = (el) => el.__data__ && el.__data__[0] && el.__data__[0].trace.name;
        const count = (g, sel) => g.querySelectorAll(sel).length;
        const bands = [...document.querySelectorAll('#bands g.trace.bars')].map((g) => [name(g), count(g, 'g.point')]);
        const labels = [...document.querySelectorAll('#bands .ytick text')].map((t) => t.textContent);
        const panels = [...document.querySelectorAll('section.panel')].map((p) => ({
          metric: p.dataset.metric,
          svg: p.querySelectorAll('.main-svg').length,
          traces: [...p.querySelectorAll('g.trace.scatter')].map((g) => [name(g), count(g, 'path.point')]),
          title: p.querySelector('h2').textContent,
        }));
        const shapes = [...document.querySelectorAll('#bands .shapelayer path')].length;
        const ticks = [...document.querySelectorAll('#bands .xtick text')].map((t) => t.textContent);
        return {bands, labels, panels, shapes, ticks};
        """
    )
    # A band per patch and per group, each with one bar per window of `check`.
    windows = {f"{c['manifest']['name']} · {w['patch']}": 0 for c in checks for w in c["windows"]}
    for c in checks:
        for w in c["windows"]:
            windows[f"{c['manifest']['name']} · {w['patch']}"] += 1
        for w in c["group_windows"]:
            key = f"{c['manifest']['name']} · group {w['group']}"
            windows[key] = windows.get(key, 0) + 1
    assert [b[0] for b in dom["bands"]] == rows
    assert sorted(dom["labels"]) == sorted(rows)  # the tick order in the DOM is plotly's
    assert {b[0]: b[1] for b in dom["bands"]} == windows
    # The commit axis is labelled with commits, and the latest bisect's first bad commit is marked.
    commits = [c["commit"] for c in checks[0]["commits"]]
    assert dom["ticks"] and all(any(sha.startswith(t) for sha in commits) for t in dom["ticks"])
    assert dom["shapes"] == 1
    # A panel per metric; refused runs (v0.5.8 and rename-kimi, eagle3) are marks in each.
    runs = json.loads(runs_json(demo))["runs"]
    assert [p["metric"] for p in dom["panels"]] == ["output_tok_s", "verify_ms"]
    assert [p["title"] for p in dom["panels"]] == ["output_tok_s (tok/s)", "verify_ms (ms)"]
    refused = sum(r["outcome"] == "refused" for r in runs)
    assert refused == 2
    for panel in dom["panels"]:
        traces = dict(panel["traces"])
        assert panel["svg"] >= 1
        assert traces["refused"] == refused
        ok = [r for r in runs if r["outcome"] == "ok" and panel["metric"] in r["stats"] and r["profile"] == "eagle3"]
        # A point per launch; a median (with its interval) per benchmarked commit, not per run.
        assert traces["eagle3 launches"] == len(ok) == 8  # two launches a side of the boundary; inert commits skipped
        assert traces["eagle3 median (interval)"] == len({r["commit"] for r in ok}) == 4
        assert traces["different"] == 1  # the first bad commit against its parent, two launches each
    assert dict(dom["panels"][0]["traces"])["baseline launches"] == 2  # no verify_ms for baseline
    assert "baseline launches" not in dict(dom["panels"][1]["traces"])
    # What is drawn is the levels of the verdicts document: x at its commit, y its median, error bars to its
    # interval (none where it has none); the different star sits on the later commit's median.
    drawn = browser.execute_script(
        """
        const report = window.patchkitReport;
        return [...document.querySelectorAll('section.panel')].map((p) => {
          const gd = p.querySelector('.js-plotly-plot');
          const sha = (x) => report.check[0].commits[x].commit;
          return gd.data.filter((t) => / median \\(interval\\)$| launches$|^different$/.test(t.name)).map((t) => ({
            name: t.name, commits: t.x.map((x) => sha(Math.round(x))), y: t.y,
            up: t.error_y ? t.error_y.array.map((v) => (Number.isNaN(v) ? null : v)) : null,
            down: t.error_y ? t.error_y.arrayminus.map((v) => (Number.isNaN(v) ? null : v)) : null,
          }));
        });
        """
    )
    verdicts = data_of(browser)["verdicts"]
    for panel, traces in zip(dom["panels"], drawn, strict=True):
        for trace in traces:
            profile = trace["name"].split(" ")[0]
            ours = [lv for lv in verdicts["levels"] if lv["metric"] == panel["metric"] and lv["profile"] == profile]
            if trace["name"].endswith("launches"):
                assert trace["y"] == [v for lv in ours for v in lv["launches"]]
                assert trace["commits"] == [lv["commit"] for lv in ours for _ in lv["launches"]]
            elif trace["name"] == "different":
                median = {lv["commit"]: lv["median"] for lv in verdicts["levels"] if lv["metric"] == panel["metric"]}
                assert trace["y"] == [median[c] for c in trace["commits"]]
            else:
                assert trace["commits"] == [lv["commit"] for lv in ours]
                assert trace["y"] == [lv["median"] for lv in ours]
                for lv, up, down in zip(ours, trace["up"], trace["down"], strict=True):
                    if lv["interval"] is None:
                        assert up is None and down is None
                    else:
                        assert lv["median"] + up == pytest.approx(lv["interval"]["high"])
                        assert lv["median"] - down == pytest.approx(lv["interval"]["low"])
    shot = artifact(tmp_path, "report-light.png")
    browser.set_window_size(1280, browser.execute_script("return document.documentElement.scrollHeight") + 40)
    browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 20_000


def data_of(browser) -> dict[str, Any]:
    return json.loads(browser.execute_script("return JSON.stringify(window.patchkitReport)"))


def test_embedded_data_in_the_page_equals_check_and_runs_json(browser, shown, demo):
    assert shown["ready"] == "yes"
    data = data_of(browser)
    assert data["check"] == [json.loads(check_json(demo, demo.kimi)), json.loads(check_json(demo, demo.timing))]
    assert data["runs"] == json.loads(runs_json(demo))
    assert data["bisect"] == demo.bisect


def test_hover_names_the_commit_and_click_copies_its_sha(browser, shown, demo):
    from selenium.webdriver.common.action_chains import ActionChains

    assert shown["ready"] == "yes"
    browser.execute_script("window.scrollTo(0, 0)")
    check = json.loads(check_json(demo, demo.kimi))
    text = hover_bands(browser)  # the middle of the commit axis
    shown = [c for c in check["commits"] if c["commit"][:10] in text]
    assert len(shown) == 1, text
    commit = shown[0]
    assert commit["subject"] in text and commit["date"] in text
    assert "kimi-k25-eagle3: " in text and "eagle3-verify-timing: " in text  # every patch's status
    ActionChains(browser).click().perform()
    deadline = time.monotonic() + 5
    copied = ""
    while time.monotonic() < deadline and not copied:
        copied = browser.execute_script("return document.body.dataset.copied || ''")
        time.sleep(0.1)
    assert copied == commit["commit"]
    assert f"copied {commit['commit']}" in browser.find_element("id", "toast").text


def test_zooming_one_figure_moves_every_panel(browser, shown):
    assert shown["ready"] == "yes"
    browser.execute_script("Plotly.relayout(document.getElementById('bands'), {'xaxis.range': [5, 15]})")
    deadline = time.monotonic() + 10
    ranges: list[Any] = []
    while time.monotonic() < deadline:
        ranges = browser.execute_script(
            "return [...document.querySelectorAll('.js-plotly-plot')].map((gd) => gd._fullLayout.xaxis.range)"
        )
        if all(r == [5, 15] for r in ranges):
            break
        time.sleep(0.1)
    assert len(ranges) == 3 and all(r == [5, 15] for r in ranges), ranges
    ticks = browser.execute_script("return [...document.querySelectorAll('#bands .xtick text')].length")
    assert 2 <= ticks <= 12  # re-labelled for the visible commits
    browser.execute_script("Plotly.relayout(document.getElementById('bands'), {'xaxis.autorange': true})")


def test_dark_theme_recolours_every_figure(browser, shown, tmp_path):
    assert shown["ready"] == "yes"
    button = browser.find_element("id", "theme")
    button.click()  # auto -> light
    button.click()  # light -> dark
    assert button.text == "theme: dark"
    colours = browser.execute_script(
        "return [...document.querySelectorAll('.js-plotly-plot')].map((gd) => gd._fullLayout.paper_bgcolor)"
    )
    assert len(colours) == 3 and set(colours) == {"#141414"}
    shot = artifact(tmp_path, "report-dark.png")
    browser.set_window_size(1280, browser.execute_script("return document.documentElement.scrollHeight") + 40)
    browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")


# -- 5,000 commits on a 1,280-pixel screen ---------------------------------------------------------


@pytest.fixture(scope="module")
def long_page(tmp_path_factory) -> tuple[LongHistory, Path]:
    root = tmp_path_factory.mktemp("long")
    long = long_history(root, 5000)
    out = root / "long.html"
    result = run_script("report", "-m", long.manifest, "--repo", long.repo, "--store", long.store, "-o", out)
    assert result.code == 0, result.err
    assert "5000 commits, 1 manifest" in result.out, result.out
    return long, out


LAYOUT = """
const name = (el) => el.__data__ && el.__data__[0] && el.__data__[0].trace.name;
const box = (t) => { const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.right]; };
return {
  width: document.documentElement.scrollWidth,
  figures: [...document.querySelectorAll('.js-plotly-plot')].map((gd) => ({
    ticks: [...gd.querySelectorAll('.xtick text')].map(box).sort((a, b) => a[1] - b[1]),
    plot: gd._fullLayout.xaxis._length, range: gd._fullLayout.xaxis.range,
  })),
  bars: [...document.querySelectorAll('#bands g.trace.bars')].map(
    (g) => [name(g), g.querySelectorAll('g.point').length]),
  errors: [...document.querySelectorAll('section.panel g.trace.scatter')].map(
    (g) => [name(g), g.querySelectorAll('g.errorbar path.yerror').length]),
};
"""


def readable_ticks(figures: list[dict[str, Any]], shas: list[str]) -> list[str]:
    """The x tick labels, the same on every figure: a few, each a commit of ``shas``, side by side."""
    labels = [[text for text, _, _ in f["ticks"]] for f in figures]
    assert all(found == labels[0] for found in labels), labels
    assert 2 <= len(labels[0]) <= 12, labels[0]
    for figure in figures:
        boxes = figure["ticks"]
        assert all(a[2] < b[1] for a, b in pairwise(boxes)), boxes  # none overlaps the next
    assert all(any(sha.startswith(t) for sha in shas) for t in labels[0]), labels[0]
    return labels[0]


def test_5000_commits_stay_usable_on_a_1280_pixel_screen(browser, long_page, tmp_path):
    long, page = long_page
    assert page.stat().st_size < MAX_BYTES
    browser.set_window_size(1280, 1000)
    started = time.monotonic()
    seen = load(browser, page)
    print(f"5,000 commits: drawn in {time.monotonic() - started:.1f} s, {page.stat().st_size:,} bytes")
    assert seen["ready"] == "yes", browser.find_element("id", "summary").text
    assert seen["console"] == [] and fetched(seen["requests"]) == []
    data = data_of(browser)
    seen_layout = browser.execute_script(LAYOUT)
    # No horizontal scrolling; each figure has the width of the screen, minus the band labels.
    assert seen_layout["width"] <= 1280
    assert all(f["plot"] >= 900 for f in seen_layout["figures"]), [f["plot"] for f in seen_layout["figures"]]
    readable_ticks(seen_layout["figures"], long.shas)
    # Every window of `check` is a bar of its band, however narrow.
    windows: dict[str, int] = {}
    for w in data["check"][0]["windows"]:
        windows[f"hooks · {w['patch']}"] = windows.get(f"hooks · {w['patch']}", 0) + 1
    assert dict(seen_layout["bars"]) == windows and min(windows.values()) >= 15
    # An error bar for each commit level with an interval (three launches, or one with the noise prior).
    levels = data["verdicts"]["levels"]
    for profile in ("eagle3", "baseline"):
        with_interval = [lv for lv in levels if lv["profile"] == profile and lv["interval"]]
        assert dict(seen_layout["errors"])[f"{profile} median (interval)"] == len(with_interval) >= 10
    # Zoomed to 40 commits: every panel follows, and the ticks name the commits on screen.
    lo, hi = 2480, 2520
    browser.execute_script(f"Plotly.relayout(document.getElementById('bands'), {{'xaxis.range': [{lo}, {hi}]}})")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        zoomed = browser.execute_script(LAYOUT)
        if all(f["range"] == [lo, hi] for f in zoomed["figures"]) and zoomed["figures"][0]["ticks"][0][0] in {
            sha[:7] for sha in long.shas[lo : hi + 1]
        }:
            break
        time.sleep(0.1)
    assert all(f["range"] == [lo, hi] for f in zoomed["figures"]), [f["range"] for f in zoomed["figures"]]
    labels = readable_ticks(zoomed["figures"], long.shas[lo : hi + 1])
    assert all(f["plot"] / (hi - lo) >= 20 for f in zoomed["figures"])  # 20 pixels a commit and more
    # Hovering the zoomed bands names one commit on screen.
    browser.execute_script("window.scrollTo(0, 0)")
    text = hover_bands(browser)
    assert [sha for sha in long.shas[lo : hi + 1] if sha[:10] in text], (labels, text)
    shot = artifact(tmp_path, "report-5000-zoomed.png")
    browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")
    browser.execute_script("Plotly.relayout(document.getElementById('bands'), {'xaxis.autorange': true})")

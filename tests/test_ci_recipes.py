"""The CI recipes of docs/howto/ci.md (#46): the GitHub Actions workflow and the GitLab CI job parse, and run.

The runs are real: each recipe's shell steps (``run:`` steps in order, with their ``if:``; the job's
``script`` in one shell) run in a temp workspace, as the runner would, with ``UPSTREAM_URL`` pointing at a bare
copy of the demo's SGLang-shaped history instead of GitHub, so every git and patchkit command in them runs
against a real repository.  Two nights: the first checks a tip where every patch applies and remembers it; on the
second upstream has renamed the model class, so the check fails, naming the commit, the annotations or Code
Quality report name the file, ``port --dry-run`` prints its fix, and the remembered tip stays the green one.
Steps that only install (``pip install``) or are actions (checkout, cache, upload) are left to the runner: the
patchkit under test is the one on PATH, and the workspace persists from one night to the next as the cache would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import xmlschema
import yaml
from helpers import git, patchkit_script

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "docs" / "howto" / "ci"
GITHUB = RECIPES / "github-nightly.yml"
GITLAB = RECIPES / "gitlab-ci.yml"
SCHEMA = Path(__file__).resolve().parent / "fixtures" / "junit" / "junit-10.xsd"
ACTIONS = {"actions/checkout@v4", "actions/setup-python@v5", "actions/cache@v4", "actions/upload-artifact@v4"}


def load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def patchkit_lines(path: Path) -> list[str]:
    """The recipe's patchkit command lines, as written (from ``patchkit`` to the end of the line)."""
    return re.findall(r"(patchkit (?:check|port) .*)$", path.read_text(encoding="utf-8"), re.M)


def test_the_recipes_parse_and_say_what_the_page_says():
    workflow = load(GITHUB)
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert on["schedule"] and "workflow_dispatch" in on
    steps = workflow["jobs"]["check"]["steps"]
    assert {s["uses"] for s in steps if "uses" in s} == ACTIONS
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == "patchkit-junit.xml" and upload["if"] == "always()"
    for step in steps:  # no ${{ }} inside a script: values reach it through the environment
        assert "${{" not in step.get("run", ""), step
    job = load(GITLAB)["patchkit-nightly"]
    assert job["artifacts"]["reports"] == {"junit": "patchkit-junit.xml", "codequality": "gl-code-quality.json"}
    assert job["artifacts"]["when"] == "always" and job["cache"]["paths"] == ["upstream/.git"]
    for path in (GITHUB, GITLAB):
        lines = patchkit_lines(path)
        assert len(lines) == 3, lines
        assert "$since" in lines[0] and "--junit patchkit-junit.xml" in lines[0]
        assert f"--format {'github' if path == GITHUB else 'gitlab'}" in lines[1]
        assert "--dry-run" in lines[2] and lines[2].startswith("patchkit port ")
    page = (ROOT / "docs" / "howto" / "ci.md").read_text(encoding="utf-8")
    assert '--8<-- "howto/ci/github-nightly.yml"' in page and '--8<-- "howto/ci/gitlab-ci.yml"' in page


# -- running them -----------------------------------------------------------------------------------------------


class Runner:
    """A temp workspace, the upstream to fetch, and a ``patchkit`` on PATH that logs each call, then runs the
    console script under test."""

    def __init__(self, tmp_path: Path, upstream: Path) -> None:
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.upstream = upstream
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        self.log = tmp_path / "patchkit-calls.log"
        wrapper = bin_dir / "patchkit"
        wrapper.write_text(
            f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{self.log}"\nexec "{patchkit_script()}" "$@"\n', encoding="utf-8"
        )
        wrapper.chmod(0o755)
        self.path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"

    def env(self, base: dict[str, Any], branch: str) -> dict[str, str]:
        env = {**os.environ, **{k: str(v) for k, v in base.items()}}
        env.update(UPSTREAM_URL=str(self.upstream), UPSTREAM_BRANCH=branch, PATH=self.path)
        return env

    def shell(self, script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )

    def calls(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []


def run_github_night(runner: Runner, branch: str) -> dict[str, subprocess.CompletedProcess[str]]:
    """The workflow's ``run:`` steps in order, with the ``if:`` conditions it uses; ``$GITHUB_ENV`` as the
    runner keeps it (each ``NAME=value`` line is in the environment of the steps after it)."""
    workflow = load(GITHUB)
    github_env = runner.workspace.parent / "github_env"
    github_env.write_text("")
    env = runner.env(workflow["env"], branch)
    env["GITHUB_ENV"] = str(github_env)
    outcomes: dict[str, str] = {}
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    failed = False
    for step in workflow["jobs"]["check"]["steps"]:
        condition = step.get("if")
        check = outcomes.get("check", "skipped")
        run = {
            None: not failed,
            "always()": True,
            "always() && steps.check.outcome != 'skipped'": check != "skipped",
            "failure() && steps.check.outcome == 'failure'": failed and check == "failure",
        }[condition]
        if "uses" in step or not run or step["run"].startswith("pip install"):
            continue
        for line in github_env.read_text().splitlines():
            key, _, value = line.partition("=")
            env[key] = value
        done = runner.shell(step["run"], env)
        results[step.get("id") or step["name"]] = done
        outcomes[step.get("id", step["name"])] = "success" if done.returncode == 0 else "failure"
        failed = failed or done.returncode != 0
    return results


def run_gitlab_night(runner: Runner, branch: str) -> subprocess.CompletedProcess[str]:
    """The job's ``script`` in one shell, as GitLab's runner runs it (``before_script`` only installs)."""
    job = load(GITLAB)["patchkit-nightly"]
    assert all(line.startswith("pip install") for line in job["before_script"])
    return runner.shell("\n".join(job["script"]), runner.env(job["variables"], branch))


@pytest.fixture
def upstream(sglang_history, tmp_path: Path) -> tuple[Path, str, str]:
    """A bare copy of the demo history with a ``nightly`` branch at the commit the rename branch starts from
    (every patch applies there); returns it, that commit and the rename branch's tip."""
    bare = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(sglang_history.path), str(bare)], check=True)
    fork = git(bare, "merge-base", "main", "rename-kimi").strip()
    git(bare, "branch", "nightly", fork)
    return bare, fork, git(bare, "rev-parse", "rename-kimi").strip()


def last_checked(runner: Runner) -> str:
    return git(runner.workspace / "upstream", "rev-parse", "refs/patchkit/last-checked").strip()


def valid_junit(runner: Runner) -> str:
    text = (runner.workspace / "patchkit-junit.xml").read_text(encoding="utf-8")
    xmlschema.XMLSchema(str(SCHEMA)).validate(text)
    return text


@pytest.mark.slow
def test_the_github_workflow_runs_two_nights(upstream, tmp_path: Path):
    bare, fork, renamed = upstream
    runner = Runner(tmp_path, bare)

    first = run_github_night(runner, "nightly")
    assert [name for name, done in first.items() if done.returncode] == [], {k: v.stderr for k, v in first.items()}
    assert "OK: every required patch applies at the checked commit." in first["check"].stdout
    assert first["Annotate what fails at the tip"].stdout == ""
    assert "Propose a fix" not in first
    assert last_checked(runner) == fork
    valid_junit(runner)

    git(bare, "branch", "-f", "nightly", "rename-kimi")  # upstream moves on: the class is renamed
    second = run_github_night(runner, "nightly")
    check = second["check"]
    assert check.returncode == 1, check.stderr
    assert "eagle3-hooks  APPLY -> FAIL CLASS_NOT_FOUND" in check.stdout and "NEWLY FAILING" in check.stdout
    assert f"since {fork[:10]} " in check.stdout.splitlines()[0]
    annotations = second["Annotate what fails at the tip"].stdout.splitlines()
    assert len(annotations) == 1
    assert annotations[0].startswith("::error file=python/sglang/srt/models/kimi_k25.py,title=kimi-k25-eagle3%3A ")
    port = second["Propose a fix"]
    assert port.returncode == 0, port.stderr
    assert '+class = "KimiK25VLForConditionalGeneration"' in port.stdout and "nothing was written" in port.stdout
    assert "Remember the tip this green night checked" not in second
    assert last_checked(runner) == fork  # the next night is compared with the last green one again
    junit = valid_junit(runner)  # the two new commits, one window per patch
    rename = git(bare, "rev-parse", "rename-kimi~1").strip()
    assert f'name="eagle3-hooks at {rename[:10]}..{renamed[:10]} (2 commits)"' in junit
    assert 'type="CLASS_NOT_FOUND"' in junit
    assert_every_patchkit_line_ran(runner, GITHUB)


@pytest.mark.slow
def test_the_gitlab_job_runs_two_nights(upstream, tmp_path: Path):
    bare, fork, _renamed = upstream
    runner = Runner(tmp_path, bare)

    first = run_gitlab_night(runner, "nightly")
    assert first.returncode == 0, first.stderr
    assert json.loads((runner.workspace / "gl-code-quality.json").read_text()) == []
    assert last_checked(runner) == fork

    git(bare, "branch", "-f", "nightly", "rename-kimi")
    second = run_gitlab_night(runner, "nightly")
    assert second.returncode == 1, second.stderr
    assert "eagle3-hooks  APPLY -> FAIL CLASS_NOT_FOUND" in second.stdout
    [issue] = json.loads((runner.workspace / "gl-code-quality.json").read_text())
    assert issue["check_name"] == "CLASS_NOT_FOUND" and issue["severity"] == "critical"
    assert issue["location"]["path"] == "python/sglang/srt/models/kimi_k25.py"
    assert '+class = "KimiK25VLForConditionalGeneration"' in second.stdout  # port --dry-run's diff, in the log
    assert last_checked(runner) == fork
    assert 'type="CLASS_NOT_FOUND"' in valid_junit(runner)
    assert_every_patchkit_line_ran(runner, GITLAB)


def assert_every_patchkit_line_ran(runner: Runner, recipe: Path) -> None:
    """Each patchkit command line of the recipe ran at least once (its verb and options, variables expanded)."""
    calls = runner.calls()
    for line in patchkit_lines(recipe):
        words = line.split()
        verb, options = words[1], [w for w in words if w.startswith("--") and w != "--since"]
        ran = [c for c in calls if c.split()[0] == verb and all(f" {o}" in f" {c}" for o in options)]
        assert ran, (line, calls)
    assert any("--since refs/patchkit/last-checked" in c for c in calls), calls

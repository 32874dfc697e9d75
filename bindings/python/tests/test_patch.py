# SPDX-License-Identifier: MIT
"""Patches checked on this machine (verdicts compared with git's), the
patched tree written out, and sbxrun.verify() of a project with a patch
against a real sbxd."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

import sbxrun

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-project"

# A patch of three files (modified, added, deleted), shared with the Node tests.
GOOD = (Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "patch" / "three-files.diff").read_bytes()


def git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    # git runs without the sanitiser the ASan run preloads into this process
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com", GIT_CONFIG_NOSYSTEM="1", HOME=str(repo))
    return subprocess.run(["git", "-C", str(repo), *args], input=input, env=env, check=True,
                          stdout=subprocess.PIPE).stdout


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    (r / "src").mkdir(parents=True)
    (r / "src" / "a.txt").write_text("one\ntwo\nthree\n")
    (r / "gone.txt").write_text("bye\n")
    (r / "run.sh").write_text("#!/bin/sh\necho run\n")
    (r / "run.sh").chmod(0o755)
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    return r


def tree_of(d: Path) -> dict[str, tuple[bytes, bool]]:
    out = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and ".git" not in p.relative_to(d).parts:
            out[str(p.relative_to(d))] = (p.read_bytes(), os.access(p, os.X_OK))
    return out


def test_a_patch_that_applies_says_what_it_does(repo, tmp_path):
    with sbxrun.Patch(GOOD, repo=repo) as p:
        assert p.verdict == "safe"            # read: safe, not yet checked against the tree
        assert p.check() == "applies" and p.ok and p.message == "" and p.rule is None
        files = {f.path: f for f in p.files}
        assert files["src/a.txt"].change == "modified"
        assert (files["src/a.txt"].additions, files["src/a.txt"].deletions) == (1, 1)
        assert files["new.txt"].change == "added" and files["new.txt"].new_mode == 0o100644
        assert files["gone.txt"].change == "deleted" and files["gone.txt"].new_mode == 0
        # the id git gives the same diff
        want = git(repo, "patch-id", "--stable", input=GOOD).split()[0].decode()
        assert p.patch_id == want
        assert b"+TWO" in p.diff
        d = p.to_dict()
        assert d["verdict"] == "applies" and d["diffstat"] == {"files": 3, "additions": 3, "deletions": 2}

        # the tree written out is what `git apply` leaves in a clone
        git(tmp_path, "clone", "-q", str(repo), str(tmp_path / "clone"))
        git(tmp_path / "clone", "apply", input=GOOD)
        p.save_tree_dir(tmp_path / "tree")
        assert tree_of(tmp_path / "tree") == tree_of(tmp_path / "clone")
        assert tree_of(tmp_path / "tree")["run.sh"][1] is True

        # a directory with files in it is refused and kept as it was
        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "keep").write_text("keep")
        with pytest.raises(sbxrun.IoError, match="must not exist"):
            p.save_tree_dir(tmp_path / "mine")
        assert os.listdir(tmp_path / "mine") == ["keep"]
        assert not glob.glob(str(tmp_path / "mine.tmp.*"))

        p.save_tree(tmp_path / "tree.tar.gz")
        with tarfile.open(tmp_path / "tree.tar.gz") as t:
            assert sorted(t.getnames()) == ["new.txt", "run.sh", "src/a.txt"]
    # the repository is untouched
    assert git(repo, "status", "--porcelain") == b""


def test_a_series_of_patches(repo, tmp_path):
    # git's result of the two patches in turn, and the second's diff
    git(tmp_path, "clone", "-q", str(repo), str(tmp_path / "clone"))
    clone = tmp_path / "clone"
    git(clone, "apply", "--index", input=GOOD)
    git(clone, "commit", "-q", "-m", "first")
    (clone / "new.txt").write_text((clone / "new.txt").read_text() + "more\n")
    (clone / "src" / "a.txt").write_text("ONE\n" + (clone / "src" / "a.txt").read_text().split("\n", 1)[1])
    second = git(clone, "diff")
    assert second

    first = sbxrun.Patch(GOOD, repo=repo)
    assert first.check() == "applies"
    with sbxrun.Patch(second, repo=repo) as alone:  # on the base, it does not apply
        assert alone.check() == "does-not-apply"
    p = sbxrun.Patch(second, after=first)
    first.close()  # p keeps what it needs
    assert p.check() == "applies", p.message
    assert [f.path for f in p.files] == ["new.txt", "src/a.txt"]
    p.save_tree_dir(tmp_path / "tree")
    assert tree_of(tmp_path / "tree") == tree_of(clone)

    # a third on the second's tree: file operations
    with sbxrun.Patch(after=p) as third:
        third.add_file("deleted", "new.txt")
        assert third.check() == "applies"
    p.close()

    with pytest.raises(ValueError, match="after is the base"):
        sbxrun.Patch(second, repo=repo, after=p)
    with sbxrun.Patch(GOOD) as unchecked:
        with pytest.raises(sbxrun.MisuseError, match="prev must be checked against a base"):
            sbxrun.Patch(second, after=unchecked)
    with sbxrun.Patch(second, repo=repo) as stale:
        stale.check()
        with pytest.raises(sbxrun.MisuseError, match="does-not-apply"):
            sbxrun.Patch(second, after=stale)


@pytest.mark.parametrize("path,rule", [("../escape", "dotdot"), (".git/hooks/pre-commit", "git-dir"),
                                       ("/etc/passwd", "absolute")])
def test_unsafe_patches_are_a_verdict_that_names_the_path(repo, path, rule):
    diff = (f"diff --git a/{path} b/{path}\nnew file mode 100755\n--- /dev/null\n+++ b/{path}\n"
            "@@ -0,0 +1 @@\n+#!/bin/sh\n").encode()
    with sbxrun.Patch(diff, repo=repo) as p:
        assert p.verdict == "unsafe" and not p.ok
        assert p.rule == rule
        assert path.lstrip("/") in p.message or path in p.message
        assert p.check() == "unsafe"          # checking again does not change it
        with pytest.raises(sbxrun.MisuseError):
            p.save_tree_dir(repo.parent / "never")
    assert not (repo.parent / "never").exists()


def test_a_symlink_is_refused(repo):
    diff = b"diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc\n"
    with sbxrun.Patch(diff, repo=repo) as p:
        assert (p.verdict, p.rule) == ("unsafe", "symlink")


def test_does_not_apply_malformed_and_too_large(repo):
    stale = GOOD.replace(b" one\n-two", b" uno\n-two")
    with sbxrun.Patch(stale, repo=repo) as p:
        assert p.check() == "does-not-apply"
        assert "src/a.txt" in p.message
        assert p.to_dict()["verdict"] == "does-not-apply"
        assert "src/a.txt" in p.message           # kept across later calls
    with sbxrun.Patch(b"diff --git a/x b/x\n@@ this is not a hunk\n", repo=repo) as p:
        assert p.check() == "malformed" and p.message
    with sbxrun.Patch(GOOD, repo=repo, max_bytes=64) as p:
        assert p.verdict == "too-large" and "64" in p.message
    # without a base only safety is checked
    with sbxrun.Patch(GOOD) as p:
        assert p.check() == "safe" and p.ok


def test_file_operations(repo, tmp_path):
    with sbxrun.Patch(repo=repo) as p:
        p.add_file("added", "docs/new.md", "# New\n")
        p.add_file("modified", "run.sh", b"#!/bin/sh\necho changed\n", 0o755)
        p.add_file("deleted", "gone.txt")
        assert p.check() == "applies"
        assert {f.path: f.change for f in p.files} == {"docs/new.md": "added", "run.sh": "modified",
                                                       "gone.txt": "deleted"}
        assert b"+echo changed" in p.diff
        p.save_tree_dir(tmp_path / "t")
        assert (tmp_path / "t" / "docs" / "new.md").read_text() == "# New\n"
        assert not (tmp_path / "t" / "gone.txt").exists()
    with sbxrun.Patch(repo=repo) as p:
        with pytest.raises(ValueError, match="'added', 'modified' or 'deleted'"):
            p.add_file("renamed", "x")
        with pytest.raises(sbxrun.PatchError, match=r"'\.\./x'"):
            p.add_file("added", "../x", "no")   # refused alone: the others stay
        p.add_file("added", "ok.txt", "yes")
        assert p.check() == "applies" and [f.path for f in p.files] == ["ok.txt"]


def test_what_stops_the_check_raises(repo, tmp_path):
    before = sbxrun.client.live_handles()
    with pytest.raises(sbxrun.NotFoundError):
        sbxrun.Patch(GOOD, repo=tmp_path / "nowhere")
    with pytest.raises(sbxrun.NotFoundError, match="no-such-branch"):
        sbxrun.Patch(GOOD, repo=repo, base="no-such-branch")
    with pytest.raises(sbxrun.IoError):
        sbxrun.Patch(file=tmp_path / "missing.diff", repo=repo)
    with pytest.raises(ValueError):
        sbxrun.Patch(GOOD, file="x.diff")
    with pytest.raises(ValueError):
        sbxrun.Patch(GOOD, base="main")
    with sbxrun.Patch(GOOD) as p:
        p.check()
        with pytest.raises(sbxrun.MisuseError):
            p.add_file("added", "more.txt", "x")
    assert sbxrun.client.live_handles() == before   # failed constructors freed their handles


# ---- verify() against sbxd -------------------------------------------------------------------------

@pytest.fixture
def demo_repo(tmp_path):
    r = tmp_path / "demo"
    shutil.copytree(DEMO, r, ignore=shutil.ignore_patterns("patches"))
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "demo")
    return r


def verify_dirs() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "sbxrun-verify-*")))


def test_verify_a_project_with_and_without_a_patch(client, demo_repo, tmp_path):
    before = verify_dirs()
    path = tmp_path / "run.jsonl"
    with sbxrun.Transcript(path) as tr:
        result = sbxrun.verify(client, demo_repo, patch=DEMO / "patches" / "add-feature.patch", transcript=tr,
                               wall_ms=300_000)
    assert result["status"] == "passed", result
    assert [j["jobType"] for j in result["jobs"]] == ["verify.lint", "verify.test"]
    assert "titleCase" not in (demo_repo / "src" / "text.js").read_text()  # the work tree is not touched
    t = sbxrun.Transcript.load(path)
    t.verify()
    t.close()

    # a patch that breaks a test: the verdict, not an exception; the
    # stages reported as they come
    events: list[tuple[str, object]] = []
    result = sbxrun.verify(client, demo_repo, patch=(DEMO / "patches" / "break-test.patch").read_bytes(),
                           scripts=["test"], on_progress=lambda ev, job: events.append((ev, job)))
    assert result["status"] == "failed"
    assert [j["jobType"] for j in result["jobs"]] == ["verify.test"]
    assert events == [("sandbox-creating", None), ("uploading", None),
                      ("job-started", {"index": 0, "type": "verify.test", "verdict": None}),
                      ("job-ended", {"index": 0, "type": "verify.test", "verdict": "failed"}),
                      ("stopping", None)]
    assert verify_dirs() == before


def test_an_exception_from_on_progress_cancels_the_run(client, demo_repo):
    class Stop(Exception):
        pass

    seen: list[str] = []

    def on_progress(ev, job):
        seen.append(ev)
        if ev == "job-started":
            raise Stop("enough")

    with sbxrun.Run(client) as run:
        run.add_upload(demo_repo, "/vercel/sandbox")
        run.add_job("verify.lint", inputs={"script": "lint"})
        run.add_job("verify.test", inputs={"script": "test"})
        with pytest.raises(Stop, match="enough"):
            run.execute(on_progress=on_progress)
        # nothing more was reported once it raised, and no job ran to its end
        assert seen == ["sandbox-creating", "uploading", "job-started"]
        assert run.verdict == "cancelled"
        assert "passed" not in [j.verdict for j in run.jobs]


def test_verify_refuses_before_anything_is_sent(client, demo_repo):
    before = verify_dirs()
    sandboxes = len(client.list_sandboxes(limit=100)["sandboxes"])
    stale = (DEMO / "patches" / "add-feature.patch").read_bytes().replace(b"capitalize };", b"capitalise };")
    with pytest.raises(sbxrun.PatchError, match="^patch: the patch does not apply: src/text.js"):
        sbxrun.verify(client, demo_repo, patch=stale)
    hook = b"diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\nnew file mode 100755\n" \
           b"--- /dev/null\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1 @@\n+#!/bin/sh\n"
    with pytest.raises(sbxrun.PatchError, match="unsafe"):
        sbxrun.verify(client, demo_repo, patch=hook)
    with pytest.raises(ValueError, match="'deploy' is not one of"):
        sbxrun.verify(client, demo_repo, scripts=["deploy"])
    with pytest.raises(ValueError, match="nothing to verify"):
        sbxrun.verify(client, demo_repo, scripts=["build"])
    assert verify_dirs() == before
    # nothing reached the server: no sandbox was made
    assert len(client.list_sandboxes(limit=100)["sandboxes"]) == sandboxes


def test_verify_a_series_of_patches(client, demo_repo, tmp_path):
    # the second is made on top of the first, as git leaves it
    stack = tmp_path / "stack"
    git(tmp_path, "clone", "-q", str(demo_repo), str(stack))
    feature = (DEMO / "patches" / "add-feature.patch").read_bytes()
    git(stack, "apply", "--index", input=feature)
    git(stack, "commit", "-q", "-m", "feature")
    text = stack / "src" / "text.js"
    text.write_text(text.read_text().replace("module.exports = {", "// stacked\nmodule.exports = {", 1))
    on_top = git(stack, "diff")
    assert on_top
    result = sbxrun.verify(client, demo_repo, patch=[DEMO / "patches" / "add-feature.patch", on_top],
                           scripts=["test"])
    assert result["status"] == "passed", result
    with pytest.raises(sbxrun.PatchError, match="^patch: the patch does not apply"):
        sbxrun.verify(client, demo_repo, patch=[on_top])
    with pytest.raises(sbxrun.PatchError, match="patch 2 of 2: the patch does not apply"):
        sbxrun.verify(client, demo_repo, patch=[feature, feature])
    with pytest.raises(TypeError, match="a path to a diff or its bytes"):
        sbxrun.verify(client, demo_repo, patch=[feature, 3])


def test_verify_a_project_below_the_top_of_its_repository(client, tmp_path):
    mono = tmp_path / "mono"
    shutil.copytree(DEMO, mono / "apps" / "demo", ignore=shutil.ignore_patterns("patches"))
    (mono / "README").write_text("a monorepo\n")
    git(mono, "init", "-q", "-b", "main")
    git(mono, "add", "-A")
    git(mono, "commit", "-q", "-m", "mono")
    # the patch's paths are the project's own (src/text.js), as in the demo
    result = sbxrun.verify(client, mono / "apps" / "demo", patch=DEMO / "patches" / "add-feature.patch",
                           scripts=["test"])
    assert result["status"] == "passed", result
    with pytest.raises(sbxrun.NotFoundError, match="not inside a git repository"):
        sbxrun.verify(client, tmp_path / "nowhere-near-git")


def test_verify_async(client, demo_repo):
    import asyncio
    events: list[str] = []
    result = asyncio.run(sbxrun.verify_async(client, demo_repo, scripts=["lint"],
                                             on_progress=lambda ev, job: events.append(ev)))
    assert result["status"] == "passed" and [j["jobType"] for j in result["jobs"]] == ["verify.lint"]
    assert events == ["sandbox-creating", "uploading", "job-started", "job-ended", "stopping"]

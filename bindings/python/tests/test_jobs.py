# SPDX-License-Identifier: MIT
"""Runs, jobs and transcripts against a real sbxd: the demo project verified,
its transcript checked and then tampered with."""
from __future__ import annotations

from pathlib import Path

import pytest

import sbxrun

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-project"


def test_verify_the_demo_project_and_its_transcript(client, tmp_path):
    path = tmp_path / "run.jsonl"
    with sbxrun.Transcript(path) as tr, sbxrun.Run(client, transcript=tr, wall_ms=300_000) as run:
        run.add_upload(DEMO, "/vercel/sandbox")
        test = run.add_job("verify.test", inputs={"script": "test"})
        lint = run.add_job("verify.lint", inputs={"script": "lint"})
        result = run.execute()
        assert run.verdict == "passed", result
        assert result["status"] == "passed"
        # run order: lint before test, whatever the order they were added in
        assert [j.verdict for j in run.jobs] == ["passed", "passed"]
        assert run.jobs[0].result["jobType"] == "verify.lint"
        assert lint.result["jobType"] == "verify.lint" and test.exit_code == 0
        assert "pass" in test.result["stdoutTail"]

    t = sbxrun.Transcript.load(path)
    t.verify()
    assert t.complete and t.step_count >= 2
    assert len(t.head_hash) == 64
    assert t.job["job"]["type"] == "run"
    t.close()

    # one byte changed: the chain no longer holds, and says where
    data = bytearray(path.read_bytes())
    at = data.index(b'"verify.test"')
    data[at + 1] = ord("V")
    path.write_bytes(bytes(data))
    t = sbxrun.Transcript.load(path)
    with pytest.raises(sbxrun.IntegrityError) as ei:
        t.verify()
    assert ei.value.broken_entry >= 0
    t.close()


def test_a_failing_and_a_denied_job(client):
    with client.create_sandbox() as s:
        s.write_file("fail.js", b"console.log('secret-value'); process.exit(3)\n")
        with sbxrun.Run(client, sandbox=s) as run:
            job = run.add_job("verify.test", argv=["node", "fail.js"], secrets=["secret-value"])
            run.execute()
            assert run.verdict == "failed"
            assert job.verdict == "failed" and job.exit_code == 3
            assert "secret-value" not in str(job.result)
            assert "[REDACTED" in job.result["stdoutTail"]
        with sbxrun.Run(client, sandbox=s) as run:
            run.add_job("verify.test", argv=["npx", "left-pad"])
            result = run.execute()
            # refused by the command policy before anything was sent
            assert run.verdict == "denied" and result["status"] == "denied"
            assert "package_exec" in result["message"]
        s.stop()


def test_jobs_refused_before_anything_is_sent(client):
    with sbxrun.Run(client) as run:
        with pytest.raises(sbxrun.InvalidArgError) as ei:
            run.add_job("verify.everything")
        assert "verify.everything" in str(ei.value)
        # a program for repo.clone: refused when the run starts, nothing sent
        run.add_job("repo.clone", inputs={"url": "https://example.com/r.git"}, argv=["git", "clone", "x"])
        with pytest.raises(sbxrun.InvalidArgError) as ei:
            run.execute()
        assert "repo.clone" in str(ei.value)

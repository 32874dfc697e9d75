# SPDX-License-Identifier: MIT
"""Runs, jobs and transcripts against a real sbxd: the demo project verified,
its transcript checked and then tampered with."""
from __future__ import annotations

import json
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
            # a run that has started takes no more jobs
            with pytest.raises(sbxrun.MisuseError, match="jobs are added before"):
                run.add_job("verify.test", argv=["ls"])
            assert len(run.jobs) == 1
        s.stop()


def test_a_secret_of_one_job_is_redacted_in_every_job_of_the_run(client, tmp_path):
    # The lint job is given the token and leaves it in the sandbox; the test
    # job, which was never given it, prints it.
    token = "npm_tok-5bX2qL9rTz"
    with client.create_sandbox() as s:
        s.write_file("keep.js", b"require('fs').writeFileSync('left.txt', process.env.NPM_TOKEN)\n")
        s.write_file("show.js", b"process.stdout.write('left: ' + require('fs').readFileSync('left.txt'))\n")
        with sbxrun.Transcript(tmp_path / "run.jsonl") as tr, sbxrun.Run(client, sandbox=s, transcript=tr) as run:
            run.add_job("verify.lint", argv=["node", "keep.js"], env={"NPM_TOKEN": token})
            show = run.add_job("verify.test", argv=["node", "show.js"])
            result = run.execute()
            assert run.verdict == "passed", result
            assert show.result["stdoutTail"] == "left: [REDACTED:secret]"
            assert token not in json.dumps(result)
        assert token.encode() not in (tmp_path / "run.jsonl").read_bytes()
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


def test_a_job_of_its_own_with_streamed_output_and_transcript(client, tmp_path):
    path = tmp_path / "job.jsonl"
    chunks: list[tuple[int, bytes]] = []
    with client.create_sandbox() as s:
        s.write_file("t.js", b"console.log('one'); console.error('two tok-12345'); console.log('three')\n")
        with sbxrun.Transcript(path) as tr, \
                sbxrun.Job(client, "verify.test", argv=["node", "t.js"], secrets=["tok-12345"], transcript=tr) as job:
            result = job.run(s, on_output=lambda stream, chunk: chunks.append((stream, chunk)))
            assert job.verdict == "passed" and job.exit_code == 0
            assert result["jobType"] == "verify.test" and result["status"] == "passed"
            tr.finish(job)
        out = b"".join(c for st, c in chunks if st == 1)
        err = b"".join(c for st, c in chunks if st == 2)
        assert out == b"one\nthree\n"
        assert b"two" in err and b"tok-12345" not in err and b"[REDACTED" in err

        # an exception in the callback cancels the job and surfaces as itself
        def boom(stream, chunk):
            raise RuntimeError("stop here")
        with sbxrun.Job(client, "verify.test", argv=["node", "t.js"]) as job:
            with pytest.raises(RuntimeError, match="stop here"):
                job.run(s, on_output=boom)
            assert job.verdict == "cancelled"

        # a job from its JSON description, denied by a policy of its own
        pol = sbxrun.Policy({"version": 1, "extends": "none", "allow": {"programs": ["node"]}})
        with pol, sbxrun.Job(client, json_text={"jobType": "verify.test", "command": ["python3", "-c", "1"]},
                             policy=pol) as job:
            result = job.run(s)
            assert job.verdict == "denied", result
        s.stop()
    t = sbxrun.Transcript.load(path)
    t.verify()
    assert t.complete and t.job["job"]["type"] == "verify.test"
    t.close()


def test_a_job_of_its_own_refuses_bad_set_up(client):
    from sbxrun.client import live_handles
    before = live_handles()
    with pytest.raises(sbxrun.InvalidArgError, match="verify.everything"):
        sbxrun.Job(client, "verify.everything")
    with pytest.raises(sbxrun.ParseError):
        sbxrun.Job(client, json_text="{not json")
    with pytest.raises(TypeError):
        sbxrun.Job(client, "verify.test", argv="node t.js")
    assert live_handles() == before  # each refused job was freed

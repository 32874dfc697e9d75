# SPDX-License-Identifier: MIT
"""Policy, Redactor and NetworkPolicy; handles not leaked."""
from __future__ import annotations

import gc

import pytest

import sbxrun
from sbxrun import client as client_mod


def test_policy_decides_without_raising():
    p = sbxrun.Policy()
    d = p.check(["npx", "left-pad"])
    assert not d and d.reason == "package_exec" and "left-pad" in d.message
    assert p.check(["git", "status"]).allowed
    assert p.check(["cat", "/etc/shadow"]).reason == "path_outside"
    assert not p.check(["python3", "x.py"], job_type="verify.test")
    p.allow_program("python3", "verify.test")
    assert p.check(["python3", "x.py"], job_type="verify.test")
    with pytest.raises(sbxrun.InvalidArgError):
        p.check(["git"], job_type="verify.everything")
    with pytest.raises(sbxrun.ParseError):
        sbxrun.Policy("{not json")
    p2 = sbxrun.Policy({"version": 1, "jobTypes": {"verify.test": {"deny": {"programs": ["npm"]}}}})
    assert p2.check(["npm", "test"], job_type="verify.test").reason == "program_not_allowed"


def test_client_policy_refuses_before_sending(client, sandbox):
    client.set_policy(sbxrun.Policy())
    with pytest.raises(sbxrun.PolicyDeniedError) as ei:
        sandbox.run(["npx", "cowsay"])
    assert "npx" in str(ei.value)
    client.set_policy(None)
    assert sandbox.run(["echo", "free"]).stdout == b"free\n"


def test_redaction_whole_streamed_and_on_commands(client, sandbox):
    r = sbxrun.Redactor(["hunter2hunter2"])
    assert r.redact(b"pw=hunter2hunter2") == b"pw=[REDACTED:secret]"
    with pytest.raises(sbxrun.InvalidArgError):
        r.add_secret("short")  # would redact ordinary text
    st = r.stream()
    out = st.feed(b"xx hunter2") + st.feed(b"hunter2 yy") + st.finish()
    assert out == b"xx [REDACTED:secret] yy" and st.counts == {"secret": 1}
    st.close()
    client.set_redactor(r)
    res = sandbox.run(["sh", "-c", "echo token=hunter2hunter2"])
    assert res.stdout == b"token=[REDACTED:secret]\n"
    client.set_redactor(None)


def test_network_policy(client):
    n = sbxrun.NetworkPolicy.preset("repo.clone", {"url": "https://github.com/a/b.git"})
    assert n.mode == "custom" and n.to_json()["allowedDomains"] == ["github.com"]
    d = sbxrun.NetworkPolicy("deny-all")
    with pytest.raises(ValueError):
        d.mode = "open"
    with client.create_sandbox(network_policy=d.to_json()) as s:
        assert s.json["session" if "session" in s.json else "sandbox"]["networkPolicy"]["mode"] == "deny-all"
        s.stop()


def test_no_handle_leaked(client):
    gc.collect()
    base = client_mod.live_handles()
    for i in range(10_000):
        s = client.sandbox()
        k = s.command(["true"])
        p = sbxrun.Policy()
        j = sbxrun.Job(client, "verify.test")
        sn = sbxrun.Snapshot(client)
        if i % 2:
            k.close()  # some closed by hand, the rest by the collector
            s.close()
            j.close()
        del s, k, p, j, sn
    gc.collect()
    assert client_mod.live_handles() == base

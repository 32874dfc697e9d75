# SPDX-License-Identifier: MIT
"""Snapshots, listing, and commands followed by id, against a real sbxd."""
from __future__ import annotations

import time

import pytest

import sbxrun


def test_snapshot_restore_list_and_delete(client):
    with client.create_sandbox() as s:
        s.write_file("kept.txt", b"from the snapshot\n")
        snap = s.snapshot(expiration_ms=0)
        with snap:
            assert snap.id and snap.status == "created"
            assert snap.source_sandbox_id == s.id
            assert snap.expires_at is None
            s.refresh()
            assert s.status in ("stopped", "stopping", "snapshotting")
            with client.snapshot(snap.id) as again:
                assert again.id == snap.id and again.json["snapshot"]["id"] == snap.id
            page = client.list_snapshots()
            assert snap.id in [x["id"] for x in page["snapshots"]]
            with client.create_sandbox(source_snapshot=snap.id) as s2:
                assert s2.read_file("kept.txt") == b"from the snapshot\n"
                # v1 lists sandboxes by id; v2 lists named sandboxes with their session
                listed = [x.get("currentSessionId", x.get("id")) for x in client.list_sandboxes()["sandboxes"]]
                assert s2.id in listed
                s2.stop()
            snap.delete()
            assert snap.status == "deleted"
            # as on Vercel: still readable, marked deleted, left out of the list
            with client.snapshot(snap.id) as gone:
                assert gone.status == "deleted"
            assert snap.id not in [x["id"] for x in client.list_snapshots()["snapshots"]]
    with pytest.raises(sbxrun.NotFoundError):
        client.snapshot("snap_doesnotexist")


def test_detached_command_followed_waited_and_killed(sandbox):
    with sandbox.command(["sh", "-c", "echo started; sleep 0.3; echo done; exit 4"]) as cmd:
        cid = cmd.start()
        assert cid and cmd.exit_code == -1
    # the command outlived its handle; follow it from another one by id
    with sbxrun.Command.attach(sandbox, cid) as cmd:
        out = b"".join(chunk for stream, chunk in cmd.output() if stream == 1)
        assert out == b"started\ndone\n" and cmd.exit_code == 4
    with sbxrun.Command.attach(sandbox, cid) as cmd:
        assert cmd.wait() == 4

    with sandbox.command(["sleep", "60"]) as cmd:
        cid = cmd.start()
        t0 = time.monotonic()
        cmd.kill(9)
        assert cmd.wait() != 0
        assert time.monotonic() - t0 < 30
    with pytest.raises(sbxrun.NotFoundError):
        sbxrun.Command.attach(sandbox, "cmd_doesnotexist")

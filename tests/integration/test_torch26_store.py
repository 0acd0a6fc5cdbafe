"""PyTorch 2.6 TCPStore clients against `xlaunch store serve`, with torch 2.6's own server
as the control: the same script runs every operation a 2.6 client has against both, and the
results must agree, except where docs/rendezvous.md documents a difference (xlaunch's size
limits), which is asserted as documented."""
import json
import subprocess

from store_helpers import serve
from torch26_helpers import WORKERS, torch26_python, torch26_root, torch26_server  # noqa: F401

# Over xlaunch's default limits (documented under "Differences from PyTorch's server"):
# xlaunch closes the connection, torch's non-libuv server has no limit and accepts.
OVER_LIMITS = {"value_over_limit", "key_over_limit", "multi_get_over_limit", "check_over_limit"}
# Every public member of a 2.6 TCPStore and the cases that exercise it: a torch with more
# (clone, queue_push/queue_pop/queue_len come in later versions) fails here until covered.
API = {
    "add": "add", "append": "append", "check": "check", "compare_set": "cas_match",
    "delete_key": "delete", "get": "get", "has_extended_api": "has_extended_api",
    "host": "host", "libuvBackend": "libuvBackend", "multi_get": "multi_get",
    "multi_set": "multi_set", "num_keys": "num_keys", "port": None, "set": "set",
    "set_timeout": "set_timeout", "timeout": "timeout", "wait": "wait_timeout",
}


def run_ops(python, port):
    r = subprocess.run([python, str(WORKERS / "store_ops26.py"), "127.0.0.1", str(port)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"store_ops26.py failed ({r.returncode}): {r.stderr[-4000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_every_operation_matches_torch_26s_own_server(xlaunch_bin, torch26_python):
    with torch26_server(torch26_python) as port:
        control = run_ops(torch26_python, port)
    with serve(xlaunch_bin) as (proc, port):
        ours = run_ops(torch26_python, port)
    log = proc.stderr.read()
    assert control["torch"].startswith("2.6") and ours["torch"] == control["torch"]
    assert sorted(ours) == sorted(control)

    different = {k for k in control if control[k] != ours[k]}
    assert different == OVER_LIMITS, {k: (control[k], ours[k]) for k in different ^ OVER_LIMITS}
    for case in OVER_LIMITS:
        assert control[case][0] == "ok", (case, control[case])
        assert ours[case][0] == "error" and ours[case][1] == "DistNetworkError", (case, ours[case])

    # What both agreed on is what torch does (spot checks of the semantics that matter).
    assert ours["add_past_int64_max"] == ["ok", [2**63 - 1, -2**63, str(-2**63)]]
    assert ours["add_below_int64_min"] == ["ok", [-2**63, 2**63 - 1, str(2**63 - 1)]]
    assert ours["cas_missing_empty_expected"] == ["ok", "new"]
    assert ours["cas_missing_nonempty_expected"] == ["ok", ["abc", False]]
    assert ours["wait_timeout"][:2] == ["error", "DistStoreError"]
    assert "/never" in ours["wait_timeout"][2]
    assert ours["after_wait_timeout"] == ["ok", "1"]
    assert ours["wait_released_by_other_client"] == ["ok", "here"]
    assert ours["multi_get"] == ["ok", ["x", "", "\x00\xff", "ab"]]
    assert ours["value_at_limit"][1]["len"] == 64 * 2**20
    assert ours["key_at_limit"] == ["ok", "kv"]
    assert ours["multi_get_many"][1]["items"] == 131072
    assert ours["add_non_integer"][0] == "error"  # both servers drop that connection
    assert ours["after_everything"] == ["ok", ["b", 2]]

    # Each over-limit closure is the store's documented refusal, logged with the flag to raise.
    assert "SET: value of 67108865 bytes exceeds 67108864 (max_value_bytes)" in log
    assert "SET: key of 65537 bytes exceeds 65536 (max_key_bytes)" in log  # "/" + 65536
    assert "WAIT: 131073 keys in one request exceeds 131072 (max_keys_per_request)" in log
    assert "CHECK: 131073 keys in one request exceeds 131072 (max_keys_per_request)" in log
    assert "(2.2+ protocol)" in log  # the 2.6 client was recognised by its handshake

    # Every member a 2.6 client has was exercised by a case (port differs by nature).
    assert set(ours["api"]) == set(API), f"the 2.6 client's members changed: {ours['api']}"
    assert all(case in ours for case in API.values() if case is not None)


def test_raised_limits_make_the_differences_go_away(xlaunch_bin, torch26_python):
    with serve(xlaunch_bin, "--max_key_bytes", "131072", "--max_value_bytes", str(2**27),
               "--max_keys_per_request", "262144") as (_, port):
        ours = run_ops(torch26_python, port)
    for case in OVER_LIMITS:
        assert ours[case][0] == "ok", (case, ours[case])

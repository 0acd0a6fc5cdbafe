"""Every store operation a PyTorch 2.6 TCPStore client has, against the store at
argv[1]:argv[2]; prints one JSON object {case: result}. Run once against `xlaunch store serve`
and once against torch 2.6's own server: the test compares the two outputs.

A result is ["ok", value] or ["error", exception type, first line of the message with the
port replaced by PORT]. Cases that may lose their connection (over a limit) use a fresh
client, so that the cases after them are not affected.
"""
import datetime
import hashlib
import json
import sys
import threading
import time

import torch
import torch.distributed as dist

HOST, PORT = sys.argv[1], int(sys.argv[2])
INT64_MAX = 2**63 - 1
MS = datetime.timedelta(milliseconds=1)
# xlaunch's --max_key_bytes default counts the key as sent: the 2.x client prefixes "/".
KEY_LIMIT = 65536 - 1
VALUE_LIMIT = 64 * 2**20    # xlaunch's --max_value_bytes default
KEYS_LIMIT = 131072         # --max_keys_per_request default (also the libuv server's)


def client(timeout_s=60):
    # use_libuv=False: Debian 13's build has no libuv (see the shim test); the wire is the same.
    return dist.TCPStore(HOST, PORT, None, False, timeout=datetime.timedelta(seconds=timeout_s),
                         use_libuv=False)


def norm(value):
    if isinstance(value, bytes):
        if len(value) > 512:
            return {"len": len(value), "sha1": hashlib.sha1(value).hexdigest()}
        return value.decode("latin-1")
    if isinstance(value, (list, tuple)):
        if len(value) > 64:
            return {"items": len(value), "sha1": hashlib.sha1(
                json.dumps([norm(v) for v in value]).encode()).hexdigest()}
        return [norm(v) for v in value]
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return value


out = {}


def case(name, fn):
    try:
        out[name] = ["ok", norm(fn())]
    except Exception as e:  # the error itself is the result to compare
        first = (str(e).splitlines() or [""])[0].replace(str(PORT), "PORT")
        out[name] = ["error", type(e).__name__, first[:300]]


s = client()
out["torch"] = torch.__version__
out["api"] = sorted(m for m in dir(s) if not m.startswith("_"))

# set / get
case("set", lambda: s.set("k", "v"))
case("get", lambda: s.get("k"))
case("set_overwrite", lambda: (s.set("k", "v2"), s.get("k"))[1])
case("binary", lambda: (s.set("bin", bytes(range(256)) * 4), s.get("bin"))[1])
case("empty_value", lambda: (s.set("empty", b""), s.get("empty"))[1])
case("empty_key", lambda: (s.set("", "e"), s.get(""))[1])
case("utf8_key", lambda: (s.set("ключ/🔑", "é"), s.get("ключ/🔑"))[1])

# add, wrapping past the 64-bit range as torch does
case("add", lambda: [s.add("ctr", 5), s.add("ctr", -2), s.get("ctr")])
case("add_zero_creates", lambda: [s.add("zero", 0), s.check(["zero"]), s.get("zero")])
case("add_past_int64_max", lambda: [s.add("big", INT64_MAX), s.add("big", 1), s.get("big")])
case("add_below_int64_min", lambda: [s.add("neg", -INT64_MAX - 1), s.add("neg", -1),
                                      s.get("neg")])
case("add_to_set_number", lambda: (s.set("num", "41"), s.add("num", 1))[1])

# compare_set
case("cas_missing_empty_expected", lambda: s.compare_set("cs", "", "new"))
case("cas_match", lambda: s.compare_set("cs", "new", "x"))
case("cas_mismatch", lambda: s.compare_set("cs", "bad", "y"))
case("cas_value_after", lambda: s.get("cs"))
case("cas_missing_nonempty_expected", lambda: [s.compare_set("nokey", "abc", "d"),
                                                s.check(["nokey"])])
case("cas_to_empty", lambda: [s.compare_set("cs", "x", ""), s.get("cs")])
case("cas_empty_matches_empty", lambda: [s.compare_set("cs", "", "z"), s.get("cs")])

# wait with timeouts; the connection stays usable after a timed-out wait
case("wait_present", lambda: s.wait(["k", "ctr"]))
case("wait_present_timeout", lambda: s.wait(["k"], 1000 * MS))
case("wait_empty_list", lambda: s.wait([]))
case("wait_timeout", lambda: s.wait(["never"], 300 * MS))
case("after_wait_timeout", lambda: (s.set("after", "1"), s.get("after"))[1])
case("wait_some_missing", lambda: s.wait(["k", "never"], 300 * MS))


def released_wait():
    def later():
        time.sleep(0.5)
        client().set("late", "here")
    t = threading.Thread(target=later)
    t.start()
    s.wait(["late"], 60000 * MS)
    t.join()
    return s.get("late")


case("wait_released_by_other_client", released_wait)
case("get_missing_times_out", lambda: client(1).get("absent"))

# check
case("check", lambda: [s.check(["k"]), s.check(["k", "never"]), s.check(["never"])])
case("check_empty_list", lambda: s.check([]))

# delete_key
case("delete", lambda: [s.delete_key("k"), s.delete_key("k"), s.check(["k"])])
case("delete_missing", lambda: s.delete_key("never"))

# append
case("append", lambda: [s.append("ap", "a"), s.append("ap", "b"), s.get("ap")])
case("append_to_counter", lambda: (s.append("ctr", "0"), s.get("ctr"))[1])
case("append_empty", lambda: (s.append("ap", ""), s.get("ap"))[1])

# multi_set / multi_get
case("multi_set", lambda: s.multi_set(["m1", "m2", "m3"], ["x", "", b"\x00\xff"]))
case("multi_get", lambda: s.multi_get(["m1", "m2", "m3", "ap"]))
case("multi_get_duplicates", lambda: s.multi_get(["m1", "m1"]))
case("multi_set_overwrite", lambda: (s.multi_set(["m1", "m1"], ["a", "b"]), s.get("m1"))[1])
case("multi_set_empty", lambda: s.multi_set([], []))
case("multi_get_empty", lambda: s.multi_get([]))
case("multi_get_missing", lambda: client(1).multi_get(["m1", "absent"]))

# num_keys (init/ counts the client objects; it is a key like the others)
case("num_keys", lambda: s.num_keys())

# set_timeout / timeout
case("timeout", lambda: s.timeout)
case("set_timeout", lambda: (s.set_timeout(datetime.timedelta(milliseconds=250)), s.timeout)[1])
case("get_after_set_timeout", lambda: s.get("absent2"))
case("set_timeout_back", lambda: (s.set_timeout(datetime.timedelta(seconds=60)), s.get("m1"))[1])

# attributes
case("host", lambda: s.host)
case("libuvBackend", lambda: s.libuvBackend)
case("has_extended_api", lambda: s.has_extended_api())

# values and keys at xlaunch's size limits (its defaults): at the limit works everywhere
big_value = bytes(i % 251 for i in range(VALUE_LIMIT))
case("value_at_limit", lambda: (s.set("bigv", big_value), s.get("bigv"))[1])
case("append_to_limit", lambda: (s.set("apbig", big_value[:-10]), s.append("apbig", b"x" * 10),
                                 len(s.get("apbig")))[2])
case("key_at_limit", lambda: (lambda c: (c.set("K" * KEY_LIMIT, "kv"),
                                          c.get("K" * KEY_LIMIT))[1])(client()))
del big_value

# many keys per request, up to the limit
keys = [f"many/{i}" for i in range(KEYS_LIMIT)]
case("multi_set_many", lambda: s.multi_set(keys, [str(i) for i in range(KEYS_LIMIT)]))
case("multi_get_many", lambda: s.multi_get(keys))
case("check_many", lambda: s.check(keys))
case("wait_many", lambda: s.wait(keys, 60000 * MS))
case("num_keys_after_many", lambda: s.num_keys())

# Over xlaunch's limits (documented differences; fresh clients each)
case("value_over_limit", lambda: (lambda c: (c.set("over", b"v" * (VALUE_LIMIT + 1)),
                                             len(c.get("over")))[1])(client()))
case("key_over_limit", lambda: (lambda c: (c.set("K" * (KEY_LIMIT + 1), "kv"),
                                           c.get("K" * (KEY_LIMIT + 1)))[1])(client()))
case("multi_get_over_limit", lambda: len(client().multi_get(keys + ["many/0"])))
case("check_over_limit", lambda: client().check(keys + ["many/0"]))
case("add_non_integer", lambda: (lambda c: (c.set("text", "abc"), c.add("text", 1))[1])(client()))

# the store is still fine for a new client after all of that
case("after_everything", lambda: (lambda c: [c.get("m1"), c.add("ctr2", 2)])(client()))

print(json.dumps(out), flush=True)

"""NCCL's own INFO lines, parsed per host and pid from a server log (fixture built from NCCL's documented line
format)."""

from __future__ import annotations

from pathlib import Path

from patchkit.proof.nccllog import parse_nccl_log

FIXTURE = Path(__file__).parent / "fixtures" / "nccl" / "server_nccl_info.log"


def test_the_fixture_gives_each_pid_its_variables_and_version() -> None:
    found = parse_nccl_log(FIXTURE.read_text().splitlines())
    assert sorted(found) == [("h200-node-07", 2345678), ("h200-node-07", 2345679)]
    rank0, rank1 = found["h200-node-07", 2345678], found["h200-node-07", 2345679]
    assert rank0.host == "h200-node-07" and rank0.devices == ("0",)
    assert rank0.version == "2.27.5+cuda12.9"
    assert rank1.version is None  # only rank 0 printed its version line
    # the first value NCCL printed wins (it reads each variable once per process); an integer parameter's
    # trailing period (ncclLoadParam's "%lld.") is not part of its value
    assert rank0.env == {
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_CUMEM_ENABLE": "0",
        "NCCL_P2P_LEVEL": "NVL",
        "NCCL_MIN_NCHANNELS": "4",
    }
    assert rank1.env["NCCL_MIN_NCHANNELS"] == "8"
    assert rank1.env["NCCL_CUMEM_ENABLE"] == "0"  # from the line with NCCL's timestamp prefix
    assert rank1.to_json()["env"]["NCCL_P2P_LEVEL"] == "NVL"


def test_lines_that_are_not_nccl_info_are_ignored() -> None:
    lines = [
        "h200:1:1 [0] NCCL WARN NCCL_P2P_LEVEL set by environment to SYS",
        "[2025-11-20 TP0] NCCL_P2P_LEVEL set by environment to SYS",
        "not even close",
        "h200:12:13 [3] NCCL INFO NCCL_ALGO set by environment to Ring\r\n",
    ]
    found = parse_nccl_log(lines)
    assert list(found) == [("h200", 12)]
    assert found["h200", 12].env == {"NCCL_ALGO": "Ring"} and found["h200", 12].devices == ("3",)


def test_only_an_integers_trailing_period_is_dropped() -> None:
    lines = [
        "h:7:7 [0] NCCL INFO NCCL_MIN_NCHANNELS set by environment to -1.",
        "h:7:7 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1",  # ncclGetLevel's "%d": no period
        "h:7:7 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to =eth0.",  # a string: as printed
        "[2025-11-20 10:00:05.123] h:7:7 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 4194304.",
    ]
    assert parse_nccl_log(lines)["h", 7].env == {
        "NCCL_MIN_NCHANNELS": "-1",
        "NCCL_P2P_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "=eth0.",
        "NCCL_BUFFSIZE": "4194304",
    }


def test_two_hosts_pid_is_two_processes() -> None:
    """One log from two nodes (a multi-node server's head gathers them): each node's pid 1234 keeps its own values,
    where keying by pid alone would give node-b's rank node-a's NCCL_P2P_LEVEL and version."""
    lines = [
        "node-a:1234:1240 [0] NCCL INFO NCCL version 2.27.5+cuda12.9",
        "node-a:1234:1240 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL",
        "node-b:1234:1251 [0] NCCL INFO NCCL version 2.28.9+cuda13.0",
        "node-b:1234:1251 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS",
    ]
    found = parse_nccl_log(lines)
    assert {key: (p.version, p.env["NCCL_P2P_LEVEL"]) for key, p in found.items()} == {
        ("node-a", 1234): ("2.27.5+cuda12.9", "NVL"),
        ("node-b", 1234): ("2.28.9+cuda13.0", "SYS"),
    }

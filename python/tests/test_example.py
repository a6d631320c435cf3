"""The example runtime and the loop benchmark, run end to end as a user would run them.

Each runs in a subprocess with this interpreter and environment (so it finds the same
taskledger package) and must finish within a minute."""

import os
import re
import subprocess
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(PYTHON_DIR, "examples", "mapreduce.py")
BENCH = os.path.join(PYTHON_DIR, "bench", "bench_loop.py")


def run(*argv):
    proc = subprocess.run([sys.executable, *argv], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def test_mapreduce_reruns_the_killed_workers_tasks_and_drains():
    # Two seconds of silence make a loss (the example's default is one): a busy CI machine
    # that stalls the driver for a second must not make a healthy worker look dead.
    rc, out, err = run(EXAMPLE, "--heartbeat-timeout", "2")
    assert rc == 0, out + err
    assert "matches a direct count" in out, out
    # The killed worker was found by its missing heartbeats, and what it ran or held ran again.
    m = re.search(r"rerun: (\d+) attempt\(s\) ended EXECUTOR_LOST, (\d+) map output\(s\) "
                  r"RESUBMITTED, all ran again on other workers", out)
    assert m, out
    assert int(m.group(1)) >= 1 and int(m.group(2)) >= 1, out
    assert "lost by heartbeat timeout" in out, out
    assert re.search(r"ledger drained: 0 task sets, 0 running attempts, 0 pending tasks", out), out


def test_mapreduce_without_a_kill():
    rc, out, err = run(EXAMPLE, "--no-kill", "--workers", "2", "--partitions", "4",
                       "--reducers", "2", "--seed", "7")
    assert rc == 0, out + err
    assert "matches a direct count" in out, out
    assert "rerun: none" in out, out
    assert "ledger drained" in out, out


def test_bench_loop_runs_without_dask():
    rc, out, err = run(BENCH, "--no-dask", "--tasks", "2000", "--repeats", "1")
    assert rc == 0, out + err
    m = re.search(r"taskledger loop\s+(\d+) tasks/s", out)
    assert m and int(m.group(1)) > 0, out
    assert re.search(r"taskledger loop, every callback\s+(\d+) tasks/s", out), out

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


def rerun_counts(out):
    m = re.search(r"rerun: (\d+) attempt\(s\) ended EXECUTOR_LOST, (\d+) map output\(s\) "
                  r"RESUBMITTED, (\d+) FETCH_FAILED; map stage ran (\d+) time\(s\), reduce stage "
                  r"(\d+); all ran again on other workers", out)
    assert m, out
    return [int(g) for g in m.groups()]


DRAINED = r"ledger drained: 0 task sets, 0 running attempts, 0 pending tasks, 0 live executors"

# Two seconds of silence make a loss (the example's default is one): a busy CI machine that
# stalls the driver for a second must not make a healthy worker look dead.
HEARTBEAT = ("--heartbeat-timeout", "2")


def test_mapreduce_reruns_a_worker_lost_during_the_map_stage():
    rc, out, err = run(EXAMPLE, *HEARTBEAT)
    assert rc == 0, out + err
    assert "matches a direct count" in out, out
    # Found by its missing heartbeats: the map it ran ended EXECUTOR_LOST and the outputs it
    # held RESUBMITTED (the stage was active), all in the first attempt of each stage.
    assert "lost by heartbeat timeout" in out, out
    lost, resubmitted, fetch_failed, map_runs, reduce_runs = rerun_counts(out)
    assert lost >= 1 and resubmitted >= 2, out
    assert (fetch_failed, map_runs, reduce_runs) == (0, 1, 1), out
    assert re.search(DRAINED, out), out


def test_mapreduce_reruns_the_maps_of_a_worker_lost_during_the_reduce_stage():
    # Enough workers that the lost reduce task runs again at once, before the map outputs it
    # needs exist again: it fails with FETCH_FAILED, and the reduce stage runs a second time.
    rc, out, err = run(EXAMPLE, *HEARTBEAT, "--kill-during", "reduce", "--workers", "8",
                       "--partitions", "16", "--reducers", "8")
    assert rc == 0, out + err
    assert "matches a direct count" in out, out
    lost, resubmitted, fetch_failed, map_runs, reduce_runs = rerun_counts(out)
    assert lost >= 1 and resubmitted == 0 and map_runs == 2, out
    assert fetch_failed >= 1 and reduce_runs == 2, out
    assert re.search(DRAINED, out), out


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

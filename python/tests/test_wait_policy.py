"""The OpenMP wait policy the package sets before its extension loads: the `orchid`
command's choice (spin where the cores are idle, passive where others keep them busy),
and none where the user chose one."""

import os
import subprocess
import sys

SHOW = ("import os, orchid; print(os.environ.get('GOMP_SPINCOUNT'), "
        "os.environ.get('OMP_WAIT_POLICY'), os.environ.get('ORCHID_OMP_POLICY_SET', ''))")
CHOSEN = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "ORCHID_OMP_POLICY_SET")


def imported_environment(**extra):
    env = {k: v for k, v in os.environ.items() if k not in CHOSEN}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True, text=True,
                         check=True).stdout.split(" ", 2)
    return out[0], out[1], out[2].strip()


def test_a_policy_is_chosen_and_said_why():
    spin, policy, why = imported_environment()
    assert (spin == "100000") != (policy == "PASSIVE"), (spin, policy)
    assert "busy with other processes at start" in why


def test_the_users_choice_is_kept():
    spin, policy, why = imported_environment(OMP_WAIT_POLICY="ACTIVE")
    assert (spin, policy, why) == ("None", "ACTIVE", "")


def test_a_busy_core_is_seen():
    # A process spinning on one core, and the look made from that core only.
    core = min(os.sched_getaffinity(0))
    spinner = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"])
    try:
        look = (f"import os; os.sched_setaffinity(0, {{{core}}}); import time; time.sleep(0.2)\n"
                "from orchid._wait_policy import busy_cores_elsewhere\n"
                "print(busy_cores_elsewhere(0.3))")
        busy = float(subprocess.run([sys.executable, "-c", look], capture_output=True, text=True,
                                    check=True).stdout)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy >= 0.5, busy

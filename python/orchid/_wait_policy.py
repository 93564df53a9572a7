"""How the OpenMP threads (oneDNN's and the executor's) wait, chosen before the extension
loads: libgomp reads its settings once, when it is loaded. The same look as the `orchid`
command's (src/profile/cpu_environment.cpp): where other processes leave this process's
cores idle, threads spin briefly (100,000 spins) before they sleep; with 1,000 this VM woke
sleeping threads slowly and MobileNetV2's first runs took 7.3 ms instead of 2.9. Where
others keep the cores busy, they sleep at once (passive): a spinning thread holds the core
its descheduled peer needs. A policy the user chose is kept."""

import os
import time

_CHOSEN = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "ORCHID_OMP_POLICY_SET")
_SPIN_COUNT = "100000"
_QUIET_BUSY_CORES = 0.25
_LOOK_SECONDS = 0.05  # clock ticks are 10 ms


def _busy_ticks_on_own_cores():
    """CPU time (clock ticks) spent on the cores of this process's affinity mask, idle,
    iowait and steal excluded; None when unreadable."""
    try:
        cpus = os.sched_getaffinity(0)
        with open("/proc/stat") as stat:
            lines = stat.readlines()
    except (OSError, AttributeError):
        return None
    busy, seen = 0.0, False
    for line in lines:
        if not line.startswith("cpu") or len(line) < 4 or not line[3].isdigit():
            continue
        fields = line[3:].split()
        try:
            cpu = int(fields[0])
            user, nice, system, _idle, _iowait, irq, softirq = (float(v) for v in fields[1:8])
        except (ValueError, IndexError):
            continue
        if cpu in cpus:
            busy += user + nice + system + irq + softirq
            seen = True
    return busy if seen else None


def busy_cores_elsewhere(seconds=_LOOK_SECONDS):
    """How many of this process's cores other processes kept busy over `seconds` (this
    process's own CPU time subtracted); negative when /proc/stat is unreadable."""
    try:
        hz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return -1.0
    start = time.monotonic()
    busy0, own0 = _busy_ticks_on_own_cores(), os.times()
    time.sleep(seconds)
    busy1, own1 = _busy_ticks_on_own_cores(), os.times()
    elapsed = time.monotonic() - start
    if busy0 is None or busy1 is None or hz <= 0 or elapsed <= 0:
        return -1.0
    own = (own1.user + own1.system - own0.user - own0.system) * hz
    return max(0.0, ((busy1 - busy0) - own) / (elapsed * hz))


def wanted_environment():
    """The variables to set before the extension loads: none when the user chose a policy;
    else up to three looks (a process starting beside this one is busy for a few tens of
    milliseconds, load that matters for longer)."""
    if any(name in os.environ for name in _CHOSEN):
        return {}
    busy = busy_cores_elsewhere()
    for _ in range(2):
        if busy < _QUIET_BUSY_CORES:
            break
        busy = min(busy, busy_cores_elsewhere())
    if 0 <= busy < _QUIET_BUSY_CORES:
        return {
            "GOMP_SPINCOUNT": _SPIN_COUNT,
            "ORCHID_OMP_POLICY_SET": f"spin {_SPIN_COUNT} then sleep ({busy:.2f} of its cores "
            "busy with other processes at start)",
        }
    why = ("passive (/proc/stat unreadable)" if busy < 0 else
           f"passive ({busy:.2f} of its cores busy with other processes at start)")
    return {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0", "ORCHID_OMP_POLICY_SET": why}

"""Limits on a notebook's processes as a GROUP: a cgroup with a pids and a memory limit, made
below the grader's own cgroup (cgroup v2, or the ``pids`` and ``memory`` hierarchies of v1)
where the machine lets the grader write there — as root, or in a delegated subtree.

Where it cannot, the sandbox falls back to per-uid and per-process limits: ``RLIMIT_NPROC``
(counted per uid — for the sandbox's own unprivileged uid, or its user namespace's uid 0 — so
it bounds the notebook's processes and threads) and ``RLIMIT_AS`` per process, which bounds
the group's memory only as processes × per-process limit. :func:`group_limits` says which held.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from pathlib import Path

_PROBE: dict = {}


def _own_cgroups() -> dict[str, Path]:
    """{"v2": dir} or {"pids": dir, "memory": dir}: where this process's cgroups are mounted."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return {}
    found: dict[str, Path] = {}
    for line in mounts:
        fields = line.split()
        sep = fields.index("-")
        fstype, options = fields[sep + 1], fields[sep + 3].split(",")
        mount_root, mount_point = fields[3], fields[4]
        for entry in lines:
            number, controllers, path = entry.split(":", 2)
            v2 = fstype == "cgroup2" and number == "0"
            names = [c for c in controllers.split(",") if c in ("pids", "memory")]
            if not (v2 or (fstype == "cgroup" and names and set(names) <= set(options))):
                continue
            rel = os.path.relpath(path, mount_root)
            if rel.startswith(".."):
                continue
            where = Path(mount_point) / rel
            for key in ["v2"] if v2 else names:
                found.setdefault(key, where)
    if "pids" in found and "memory" in found:
        return {"pids": found["pids"], "memory": found["memory"]}
    if "v2" in found:
        controllers = (found["v2"] / "cgroup.controllers").read_text().split() if (
            found["v2"] / "cgroup.controllers"
        ).exists() else []  # fmt: skip
        if {"pids", "memory"} <= set(controllers):
            return {"v2": found["v2"]}
    return {}


class Group:
    """One notebook's cgroup(s): made by :meth:`make`, joined by the sandbox, removed by :meth:`remove`."""

    def __init__(self, dirs: dict[str, Path]):
        self.dirs = dirs

    @classmethod
    def make(cls, memory_mb: int, max_processes: int) -> Group | None:
        parents = _own_cgroups()
        if not parents:
            return None
        name = f"grade-{os.getpid()}-{secrets.token_hex(4)}"
        made: dict[str, Path] = {}
        try:
            if "v2" in parents:
                parent = parents["v2"]
                enabled = (parent / "cgroup.subtree_control").read_text().split()
                if not {"pids", "memory"} <= set(enabled):
                    (parent / "cgroup.subtree_control").write_text("+pids +memory")
                made["v2"] = parent / name
                made["v2"].mkdir()
                (made["v2"] / "pids.max").write_text(str(max_processes))
                (made["v2"] / "memory.max").write_text(str(memory_mb * 2**20))
                with contextlib.suppress(OSError):
                    (made["v2"] / "memory.swap.max").write_text("0")
            else:
                made["pids"] = parents["pids"] / name
                made["pids"].mkdir()
                (made["pids"] / "pids.max").write_text(str(max_processes))
                made["memory"] = parents["memory"] / name
                made["memory"].mkdir()
                (made["memory"] / "memory.limit_in_bytes").write_text(str(memory_mb * 2**20))
                with contextlib.suppress(OSError):  # only where swap is accounted
                    (made["memory"] / "memory.memsw.limit_in_bytes").write_text(
                        str(memory_mb * 2**20)
                    )
        except OSError:
            Group(made).remove()
            return None
        return cls(made)

    @property
    def procs(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    @property
    def kind(self) -> str:
        return "cgroup v2" if "v2" in self.dirs else "cgroup v1"

    def memory_hit(self) -> bool:
        """Did the group reach its memory limit (so a killed process was likely out of memory)?"""
        d = self.dirs.get("v2") or self.dirs.get("memory")
        name = "memory.events" if "v2" in self.dirs else "memory.failcnt"
        try:
            text = (d / name).read_text()
        except (OSError, TypeError):
            return False
        if "v2" in self.dirs:
            return any(line.split()[0] in ("max", "oom_kill") and line.split()[1] != "0"
                       for line in text.splitlines())  # fmt: skip
        return text.strip() not in ("", "0")

    def kill_all(self) -> None:
        for _ in range(50):
            pids = set()
            for procs in self.procs:
                with contextlib.suppress(OSError, ValueError):
                    pids |= {int(p) for p in Path(procs).read_text().split()}
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs.values():
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def group_limits() -> str:
    """Which group limit holds for this grader: 'cgroup v1', 'cgroup v2' or 'RLIMIT_NPROC'
    (with the reason no cgroup could be made)."""
    if "kind" not in _PROBE:
        group = Group.make(64, 16)
        if group is None:
            _PROBE["kind"] = "RLIMIT_NPROC (no writable cgroup with pids and memory controllers)"
        else:
            _PROBE["kind"] = group.kind
            group.remove()
    return _PROBE["kind"]

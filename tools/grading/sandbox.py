"""The student's process: a fresh IPython (``tools/grading/grade_kernel.py``) with a private read-only
copy of ``course_lib``, private HOME and configuration, per-process and group limits and, on
Linux, the sandbox of ``tools/grading/grade_sandbox.py`` (namespaces, a new root file system, never host
root). It inherits only its two protocol pipes; it reports its own start-up failure over them.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

from tools.grading import grade_kernel

from .course import Course
from .limits import Group, group_limits

DEFAULT_MAX_PROCESSES = 64  # processes and threads of one notebook, together
DEFAULT_DISK_MB = 128  # all its writable space (HOME, working folder, /tmp, /dev/shm)


class Aborted(BaseException):  # not an Exception: checks must not catch it
    """The notebook's process timed out or died: nothing more can be graded in it."""


_SANDBOX: dict = {}  # "ok": bool, "why": str — probed once per grader process
_HERE = Path(__file__).resolve().parent


def sandbox_available() -> tuple[bool, str]:
    """Can this machine build the sandbox (namespaces: as root, or in a user namespace)?"""
    if "ok" not in _SANDBOX:
        ok, why = False, ""
        if sys.platform != "linux":
            why = "needs Linux namespaces"
        else:
            probe = [sys.executable, "-S", "-E", "-s", str(_HERE / "grade_sandbox.py"), "probe"]
            try:
                r = subprocess.run(probe, capture_output=True, text=True, timeout=20)
                ok, why = r.returncode == 0, (r.stderr.strip().splitlines() or [""])[-1][:200]
            except (OSError, subprocess.SubprocessError) as exc:
                why = str(exc)
        _SANDBOX.update(ok=ok, why=why)
    return _SANDBOX["ok"], _SANDBOX["why"]


def isolation() -> str:
    """One line for the instructor: what isolates and limits a notebook on this machine."""
    ok, why = sandbox_available()
    if not ok:
        return (f"no sandbox ({why or 'unavailable'}): notebooks run with your own rights, files "
                "and network, bounded only per process; verdicts are still computed by the grader")  # fmt: skip
    who = (f"as an unprivileged uid of its own ({SANDBOX_UIDS[0]}+, not host root)"
           if os.geteuid() == 0 else f"as your uid {os.getuid()} (uid 0 of a user namespace)")  # fmt: skip
    return (f"sandbox: each notebook runs {who}; new mount, PID, network, IPC and UTS "
            f"namespaces; group limits by {group_limits()}")  # fmt: skip


# When the grader is root, each sandbox runs as a uid (and gid) of its own from this range:
# unprivileged, unused on ordinary machines, distinct between notebooks graded at once.
SANDBOX_UIDS = (1_700_000_000, 1_800_000_000)


def _paths_python_needs() -> list[str]:
    paths = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        paths.add(os.path.realpath(p))
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(os.path.realpath(sysconfig.get_paths()[key]))
    exe = os.path.realpath(sys.executable)
    paths.add(os.path.dirname(exe))
    # only the top-most of nested paths (binding /usr twice is harmless but slow)
    return sorted(p for p in paths if not any(p != q and p.startswith(q + "/") for q in paths))


class Kernel:
    """One student's IPython process, in its own temporary folder (and sandbox when available)."""

    def __init__(self, course: Course, timeout: float, memory_mb: int, sandbox: bool,
                 max_processes: int = DEFAULT_MAX_PROCESSES, disk_mb: int = DEFAULT_DISK_MB):  # fmt: skip
        self.timeout, self.deadline = timeout, time.monotonic() + timeout
        self.memory_mb, self.group = memory_mb, None
        # The runtime record of the student's process (grade_kernel.Watch), gathered from every
        # reply: course_lib functions the student's cells called (kept for the whole notebook:
        # an exercise's evidence is every cell before its check), those the grader's calls of
        # the student's functions reached, and tampering (both since the previous check).
        self.reached_in_cells: set[str] = set()
        self.reached: set[str] = set()
        self.tamper: set[str] = set()
        self.tmp = Path(tempfile.mkdtemp(prefix="grade-"))
        box = self.tmp / "box"
        lib, home, work = box / "lib", box / "home", box / "work"
        for rel, data in course.library.items():
            (lib / rel).parent.mkdir(parents=True, exist_ok=True)
            (lib / rel).write_bytes(data)
        for name, data in course.kernel_files.items():
            (lib / name).write_bytes(data)
        writable = [home / ".ipython", home / ".jupyter", home / ".config", home / ".cache", work]
        to_kernel_r, self._to_kernel = os.pipe()
        self._from_kernel, from_kernel_w = os.pipe()
        config = {
            "path": [str(lib)]
            + [os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")],
            "cwd": str(work),
            "fingerprints": course.fingerprints,
            "fd_in": to_kernel_r,
            "fd_out": from_kernel_w,
            "rlimits": {
                "RLIMIT_AS": memory_mb * 2**20,
                "RLIMIT_CPU": int(timeout) + 30,
                "RLIMIT_FSIZE": disk_mb * 2**20,
                "RLIMIT_CORE": 0,
            },
        }
        if sandbox:
            # Per uid, and the uid is the sandbox's own: it counts this notebook's processes
            # and threads only (without a sandbox it would count all of the instructor's).
            config["rlimits"]["RLIMIT_NPROC"] = max_processes
            self.group = Group.make(memory_mb, max_processes)
            uid = secrets.randbelow(SANDBOX_UIDS[1] - SANDBOX_UIDS[0]) + SANDBOX_UIDS[0]
            config["sandbox"] = {
                "root": str(self.tmp / "root"),
                "ro": _paths_python_needs(),
                "lib": str(lib),
                "box": str(box),
                "writable": [str(p) for p in writable],
                "disk_mb": disk_mb,
                "uid": uid,
                "gid": uid,
                "cgroups": self.group.procs if self.group else [],
            }
            (self.tmp / "root").mkdir()
            for p in (box, self.tmp):  # the sandbox's uid binds nothing, but reads its lib
                p.chmod(0o711)
        else:
            for d in [*writable, box / "tmp"]:
                d.mkdir(parents=True)
        (lib / "config.json").write_text(json.dumps(config))
        for p in [lib, *lib.rglob("*")]:  # readable by the sandbox's uid, writable by none
            p.chmod(0o555 if p.is_dir() else 0o444)
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "IPYTHONDIR": str(home / ".ipython"),
            "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
            "JUPYTER_DATA_DIR": str(home / ".jupyter" / "data"),
            "MPLCONFIGDIR": str(home / ".config" / "matplotlib"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "TMPDIR": "/tmp" if sandbox else str(box / "tmp"),
            "MPLBACKEND": "Agg",
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        cmd = [sys.executable, "-S", "-E", "-s", "-B", str(lib / "grade_kernel.py"),
               str(lib / "config.json")]  # fmt: skip
        # The kernel inherits no descriptor but its two pipes: no log, no terminal (it reports
        # its own start-up errors over the pipe).
        self.proc = subprocess.Popen(
            cmd,
            pass_fds=(to_kernel_r, from_kernel_w),
            close_fds=True,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        os.close(to_kernel_r)
        os.close(from_kernel_w)
        os.set_blocking(self._to_kernel, False)  # a write waits in select, under the deadline
        self.expired = False
        self.watchdog = threading.Timer(max(self.deadline - time.monotonic(), 0), self._expire)
        self.watchdog.daemon = True
        self.watchdog.start()

    def request(self, message: dict) -> dict:
        """Send one request and wait for its answer: every write and read within the notebook's
        one deadline (a kernel that stops reading cannot block the grader's write either)."""
        try:
            self._write(grade_kernel.frame(message))
            (n,) = struct.unpack("!I", self._read(4))
            if n > grade_kernel.MAX_MESSAGE:
                raise Aborted(f"the notebook sent {n} bytes at once (limit 64 MB)")
            data = self._read(n)
            if grade_kernel.elements(data) > 2 * grade_kernel.MAX_ELEMENTS:
                raise Aborted(
                    f"the answer was too large to read (more than "
                    f"{grade_kernel.MAX_ELEMENTS:,} values)"
                )
            reply = json.loads(data)
        except (BrokenPipeError, EOFError, ConnectionError):
            raise Aborted(self._death()) from None
        except (ValueError, RecursionError) as exc:
            raise Aborted(f"the notebook's process sent garbage ({str(exc)[:80]})") from None
        except MemoryError:
            raise Aborted("the answer was too large for the grader to read") from None
        if not isinstance(reply, dict):
            raise Aborted("the notebook's process sent garbage")
        if "fatal" in reply:  # the kernel could not start (or the notebook says so: same thing)
            raise Aborted(f"the notebook's process failed: {str(reply['fatal'])[-300:]}")
        if "toolarge" in reply:
            raise Aborted("the answer was too large to send (more than 64 MB)")
        in_cell = message.get("op") == "run"
        for key in ("reached", "tamper"):  # the student's process's word: strings, shortened
            got = reply.get(key)
            if isinstance(got, list):
                record = (
                    self.reached_in_cells if key == "reached" and in_cell else getattr(self, key)
                )
                record.update(str(x)[:200] for x in got[:500])
        return reply

    def _wait(self, fd: int, writing: bool) -> None:
        """Until ``fd`` is ready, or the deadline: then the kernel is killed (timed out)."""
        left = self.deadline - time.monotonic()
        poll = select.poll()
        poll.register(fd, select.POLLOUT if writing else select.POLLIN)
        ready = poll.poll(max(left, 0) * 1000)  # ready, or hung up (then the I/O says EOF/EPIPE)
        if left <= 0 or not ready or self.expired:
            self.expired = True
            self.kill()
            raise Aborted(f"timed out after {self.timeout:g} s")

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self._wait(self._to_kernel, writing=True)
            try:
                view = view[os.write(self._to_kernel, view[: 2**16]) :]
            except BlockingIOError:
                continue

    def _read(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            self._wait(self._from_kernel, writing=False)
            chunk = os.read(self._from_kernel, min(n - got, 2**20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _expire(self) -> None:
        """The watchdog: at the deadline, whatever the grader is doing, the kernel is killed."""
        self.expired = True
        self.kill()

    def _death(self) -> str:
        if self.expired:
            return f"timed out after {self.timeout:g} s"
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return "the notebook's process stopped answering"
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        if self.group is not None and self.group.memory_hit():
            how += f", its processes reached their memory limit ({self.memory_mb} MB together)"
        elif code in (137, -9):
            how += ", e.g. out of memory"
        return f"the kernel died ({how})"

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.group is not None:  # also what left the process group (setsid)
            self.group.kill_all()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    def close(self) -> None:
        self.watchdog.cancel()
        with contextlib.suppress(OSError):
            os.close(self._to_kernel)  # end of requests: the process exits by itself ...
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)  # (so its CPU time is accounted to us) ...
        self.kill()  # ... or is killed with everything it started
        with contextlib.suppress(OSError):
            os.close(self._from_kernel)
        if self.group is not None:
            self.group.remove()
        for p in self.tmp.rglob("*"):  # the read-only library, deletable again
            if p.is_dir() and not p.is_symlink():
                with contextlib.suppress(OSError):
                    p.chmod(0o700)
        shutil.rmtree(self.tmp, ignore_errors=True)


def _die_with_parent() -> None:  # in the child before exec: killed if the grader dies
    if sys.platform == "linux":
        import ctypes
        import resource

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        # not the grader worker's own memory bound (running.limit_memory): the kernel's are its own
        hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
        resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))

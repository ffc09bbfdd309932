"""The student's process: a fresh IPython (``tools/grade_kernel.py``) in its own temporary folder,
with a private read-only copy of ``course_lib``, private HOME and configuration, resource limits
and, on Linux with user namespaces, a new root file system, no network, no capabilities.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from tools import grade_kernel

from .course import Course


class Aborted(BaseException):  # not an Exception: checks must not catch it
    """The notebook's process timed out or died: nothing more can be graded in it."""


_SANDBOX: dict = {}  # "ok": bool, "why": str — probed once per grader process


def sandbox_available() -> tuple[bool, str]:
    if "ok" not in _SANDBOX:
        ok, why = False, ""
        if sys.platform != "linux" or not shutil.which("unshare"):
            why = "needs Linux and util-linux's unshare"
        else:
            cmd = [*_UNSHARE, "true"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
                ok, why = r.returncode == 0, r.stderr.strip()[:200]
            except (OSError, subprocess.SubprocessError) as exc:
                why = str(exc)
        _SANDBOX.update(ok=ok, why=why)
    return _SANDBOX["ok"], _SANDBOX["why"]


_UNSHARE = ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork",
            "--kill-child"]  # fmt: skip


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

    def __init__(self, course: Course, timeout: float, memory_mb: int, sandbox: bool):
        self.timeout, self.deadline = timeout, time.monotonic() + timeout
        self.tmp = Path(tempfile.mkdtemp(prefix="grade-"))
        box = self.tmp / "box"
        lib, home, work = box / "lib", box / "home", box / "work"
        for rel, data in course.library.items():
            (lib / rel).parent.mkdir(parents=True, exist_ok=True)
            (lib / rel).write_bytes(data)
        for name, data in course.kernel_files.items():
            (lib / name).write_bytes(data)
        for d in (home / ".ipython", home / ".jupyter", home / ".config", home / ".cache", work,
                  box / "tmp"):  # fmt: skip
            d.mkdir(parents=True)
        (self.tmp / "root").mkdir()
        to_kernel_r, self._to_kernel = os.pipe()
        self._from_kernel, from_kernel_w = os.pipe()
        config = {
            "path": [str(lib)]
            + [os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")],
            "cwd": str(work),
            "fd_in": to_kernel_r,
            "fd_out": from_kernel_w,
            "rlimits": {
                "RLIMIT_AS": memory_mb * 2**20,
                "RLIMIT_CPU": int(timeout) + 30,
                "RLIMIT_FSIZE": 256 * 2**20,
                "RLIMIT_CORE": 0,
            },
        }
        if sandbox:
            config["sandbox"] = {
                "root": str(self.tmp / "root"),
                "ro": _paths_python_needs(),
                "rw": [str(box)],
                "ro_inside": [str(lib)],
            }
        else:
            for p in lib.rglob("*"):  # read-only for a non-root user (root ignores it)
                p.chmod(0o555 if p.is_dir() else 0o444)
        (self.tmp / "config.json").write_text(json.dumps(config))
        (lib / "config.json").write_text(json.dumps(config))
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
        if sandbox:
            cmd = [*_UNSHARE, "--", *cmd]
        self._log = open(self.tmp / "kernel.log", "wb")  # closed in close()
        self.proc = subprocess.Popen(
            cmd,
            pass_fds=(to_kernel_r, from_kernel_w),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        os.close(to_kernel_r)
        os.close(from_kernel_w)

    def request(self, message: dict) -> dict:
        """Send one request and wait for its answer, within the notebook's time budget."""
        try:
            grade_kernel.send(self._to_kernel, message)
            (n,) = struct.unpack("!I", self._read(4))
            if n > grade_kernel.MAX_MESSAGE:
                raise Aborted(f"the notebook sent {n} bytes at once (limit 64 MB)")
            reply = json.loads(self._read(n))
        except (BrokenPipeError, EOFError, ConnectionError):
            raise Aborted(self._death()) from None
        except (ValueError, RecursionError) as exc:
            raise Aborted(f"the notebook's process sent garbage ({str(exc)[:80]})") from None
        if not isinstance(reply, dict):
            raise Aborted("the notebook's process sent garbage")
        if "toolarge" in reply:
            raise Aborted("the answer was too large to send (more than 64 MB)")
        return reply

    def _read(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_kernel], [], [], left)[0]:
                self.kill()
                raise Aborted(f"timed out after {self.timeout:g} s")
            chunk = os.read(self._from_kernel, min(n - got, 2**20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _death(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return "the notebook's process stopped answering"
        log = (self.tmp / "kernel.log").read_text(errors="replace").strip().splitlines()
        tail = f" ({log[-1][:160]})" if log else ""
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        if code == 137 or code == -9:
            how += ", e.g. out of memory"
        return f"the kernel died ({how}){tail}"

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._to_kernel)  # end of requests: the process exits by itself ...
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)  # (so its CPU time is accounted to us) ...
        self.kill()  # ... or is killed with everything it started
        with contextlib.suppress(OSError):
            os.close(self._from_kernel)
        self._log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _die_with_parent() -> None:  # in the child before exec: killed if the grader dies
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

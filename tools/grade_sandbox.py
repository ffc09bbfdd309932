"""The sandbox a student's notebook runs in (Linux, unprivileged user namespaces).

The grader starts ``unshare --user --map-root-user --net --mount --pid --fork --kill-child python
-S grade_kernel.py CONFIG``; :func:`enter` then runs first, as root of the new namespaces only:

- a new root file system (tmpfs) that holds, read-only, only what Python needs (``/usr``, ``/lib*``,
  ``/etc``, the Python installation and the virtual environment) and, writable, the notebook's
  own temporary folder (its copy of ``course_lib`` inside is read-only). The repository, its
  ``solutions/``, ``.git`` and every other file of the machine are simply not there;
- ``/tmp`` and ``/dev/shm`` small private tmpfs, ``/dev`` with null/zero/random/urandom, a fresh
  ``/proc`` of the new PID namespace;
- no network (a new network namespace has only a loopback that is down);
- then ``chroot`` and every capability dropped (``no_new_privs``), so the mounts cannot be undone.
"""

from __future__ import annotations

import ctypes
import os

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
ST_FLAGS = {1: MS_RDONLY, 2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC}  # statvfs f_flag -> MS_*
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source, target, fstype, flags, data=None) -> None:
    enc = [None if v is None else os.fsencode(v) for v in (source, target, fstype, data)]
    if _libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} -> {target}: {os.strerror(err)}")


def _bind(source: str, target: str, readonly: bool) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(source, target, None, MS_BIND | MS_REC)
    locked = sum(ms for st, ms in ST_FLAGS.items() if os.statvfs(source).f_flag & st)
    flags = MS_REMOUNT | MS_BIND | locked | (MS_RDONLY if readonly else 0)
    _mount(None, target, None, flags)


def enter(config: dict) -> None:
    root = config["sandbox"]["root"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    # The private /tmp first: the Python installation, the venv or the repository may live
    # under /tmp themselves (a CI checkout, `make test`'s clean clone), and are bound on top.
    for path, size in (("/tmp", "256m"), ("/dev/shm", "64m")):
        os.makedirs(root + path, exist_ok=True)
        _mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    for path in config["sandbox"]["ro"]:
        if os.path.islink(path):  # /bin -> usr/bin on merged-/usr systems
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            os.symlink(os.readlink(path), root + path)
        elif os.path.exists(path):
            _bind(path, root + path, readonly=True)
    for dev in ("null", "zero", "random", "urandom"):
        _bind(f"/dev/{dev}", f"{root}/dev/{dev}", readonly=False)
    os.symlink("/proc/self/fd", f"{root}/dev/fd")
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in config["sandbox"]["rw"]:
        _bind(path, root + path, readonly=False)
    for path in config["sandbox"]["ro_inside"]:  # read-only parts of the writable folder
        _bind(path, root + path, readonly=True)
    os.chroot(root)
    os.chdir("/")
    _drop_privileges()


def _drop_privileges() -> None:
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "no_new_privs")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]  # fmt: skip

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3, all zero
    if _libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        raise OSError(ctypes.get_errno(), "capset")

"""The sandbox a student's notebook runs in (Linux; namespaces, and a cgroup where one is writable).

The grader starts ``python -S grade_kernel.py CONFIG``; :func:`enter` runs first, before any
student code, in that process (the *outer* process):

1. it joins the notebook's cgroups (memory and pids limits of the whole group; the grader made
   them where the machine lets it, see ``tools/grading/limits.py``);
2. it creates new mount, PID, network, IPC and UTS namespaces — as host root directly, otherwise
   inside a new user namespace where the grader's uid is mapped to uid 0 (the kernel refuses
   everything else to an unprivileged user);
3. it forks: the outer process stays behind, waits, and exits as its child did; the child is
   process 1 of the new PID namespace and builds the sandbox:

- a new root file system (tmpfs, read-only once built) that holds, read-only, only what Python
  needs (``/usr``, ``/lib*``, ``/etc``, the Python installation and the virtual environment) and
  the notebook's private copy of ``course_lib`` (read-only). The repository, ``solutions/``,
  ``.git`` and every other file of the machine are simply not there;
- all writable space (HOME, the working folder, ``/tmp``, ``/dev/shm``) in ONE size-limited
  tmpfs (``disk_mb``), nothing on the host's disk;
- ``/dev`` with null/zero/random/urandom; a fresh ``/proc`` of the new PID namespace with
  ``/proc/sys`` read-only and ``/proc/sysrq-trigger``, ``/proc/kcore`` and the like masked;
- no network (a new network namespace has only a loopback that is down), its own SysV IPC and
  POSIX message queues (a new IPC namespace) and its own host name (a new UTS namespace);
- then ``chroot``, and the student's identity: when the grader is host root, an unprivileged uid
  and gid of its own (``uid``, never 0, no supplementary groups); otherwise uid 0 of the user
  namespace, which is the grader's own unprivileged uid on the host. It joins a new, empty
  session keyring (keys are not namespaced: the grader's would be readable). Every capability
  is dropped and ``no_new_privs`` set, so the mounts cannot be undone and nothing regains
  privileges; last, a seccomp filter (:func:`_filter_system_calls`) makes file locks no-ops
  and refuses inotify, fanotify, mincore and the key system calls: no channel between
  sandboxes graded at once through the read-only files they share.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
ST_FLAGS = {1: MS_RDONLY, 2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC}  # statvfs f_flag -> MS_*
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 38, 24
PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PR_SET_DUMPABLE = 22, 2, 4
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
# Files of /proc a container runtime masks (a missing one is skipped).
PROC_MASKED = ("sysrq-trigger", "kcore", "kmsg", "keys", "timer_list", "sched_debug", "acpi",
               "scsi", "latency_stats", "interrupts")  # fmt: skip
PROC_READ_ONLY = ("sys", "bus", "fs", "irq")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None) -> None:
    enc = [None if v is None else os.fsencode(v) for v in (source, target, fstype, data)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]),
           f"mount {source} -> {target}")  # fmt: skip


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
    """Put this process into its sandbox; returns in the sandboxed child (see the module doc)."""
    box = config["sandbox"]
    for procs in box.get("cgroups", []):  # before anything forks: every process is counted
        with open(procs, "w") as fh:
            fh.write("0")
    as_root = _unshare()
    child = os.fork()
    if child:
        _stay_outside(child, config)
    _build(box, as_root)
    if as_root:
        _become(int(box["uid"]), int(box["gid"]))
    # The uid change made it undumpable: its /proc files would be root's, so the kernel could
    # not reset and read its own memory high-water mark nor sample a child's (10.3's Peak).
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    _new_session_keyring()
    _drop_privileges()
    _filter_system_calls()
    # Killed with the outer process (set after the uid change, which clears it).
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _unshare() -> bool:
    """New mount, PID, network, IPC and UTS namespaces (in a new user namespace unless root)."""
    as_root = os.geteuid() == 0
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    _check(_libc.unshare(flags | (0 if as_root else CLONE_NEWUSER)), "unshare")
    if not as_root:  # the only mapping an unprivileged user may write: itself as uid 0
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"),
                           ("gid_map", f"0 {gid} 1")):  # fmt: skip
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
    return as_root


def _stay_outside(child: int, config: dict) -> None:
    """The outer process: hold nothing, wait for the sandbox, and end as it ended."""
    for fd in (config["fd_in"], config["fd_out"]):
        os.close(fd)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _build(box: dict, as_root: bool) -> None:
    root, top = box["root"], box["box"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    # All writable space is ONE tmpfs of disk_mb: its folders become /tmp, /dev/shm and the
    # notebook's folder (HOME, the working folder). /tmp first: the Python installation, the
    # venv or the notebook's folder may live under /tmp (a CI checkout, `make test`'s clean
    # clone) and are bound on top of it.
    space = root + "/.writable"
    os.makedirs(space)
    _mount("tmpfs", space, "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(box['disk_mb'])}m,mode=755")
    for name in ("tmp", "shm", "box"):
        os.makedirs(f"{space}/{name}", mode=0o1777 if name != "box" else 0o755)
        os.chmod(f"{space}/{name}", 0o1777 if name != "box" else 0o755)
    _bind(f"{space}/tmp", root + "/tmp", readonly=False)
    _bind(f"{space}/shm", root + "/dev/shm", readonly=False)
    _bind(f"{space}/box", root + top, readonly=False)
    for path in box["writable"]:
        os.makedirs(root + path, exist_ok=True)
    if as_root:  # the student's uid owns its writable space
        for folder, dirs, _ in os.walk(space):
            for name in [".", *dirs]:
                os.chown(os.path.join(folder, name), int(box["uid"]), int(box["gid"]))
    _libc.umount2(os.fsencode(space), 2)  # MNT_DETACH: reachable only through its binds now
    for path in box["ro"]:
        if os.path.islink(path):  # /bin -> usr/bin on merged-/usr systems
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            if not os.path.lexists(root + path):
                os.symlink(os.readlink(path), root + path)
        elif os.path.exists(path):
            _bind(path, root + path, readonly=True)
    for dev in ("null", "zero", "random", "urandom"):
        _bind(f"/dev/{dev}", f"{root}/dev/{dev}", readonly=False)
    os.symlink("/proc/self/fd", f"{root}/dev/fd")
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in PROC_READ_ONLY:
        if os.path.isdir(f"{root}/proc/{name}"):
            _bind(f"{root}/proc/{name}", f"{root}/proc/{name}", readonly=True)
    for name in PROC_MASKED:
        path = f"{root}/proc/{name}"
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=0")
        elif os.path.exists(path):
            _mount(f"{root}/dev/null", path, None, MS_BIND)
    _bind(box["lib"], root + box["lib"], readonly=True)
    _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _check(_libc.sethostname(b"sandbox", 7), "sethostname")
    os.chroot(root)
    os.chdir("/")


def _become(uid: int, gid: int) -> None:
    """Host root no more: an unprivileged uid and gid, no supplementary groups."""
    if uid <= 0 or gid <= 0:
        raise ValueError(f"the sandbox's uid and gid must be unprivileged, got {uid}:{gid}")
    for cap in range(64):  # needs CAP_SETPCAP, so before the uid change
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if 0 in os.getresuid() or 0 in os.getresgid():
        raise OSError("the sandbox is still root")


# System calls by architecture (``os.uname().machine``): the audit arch of seccomp, and the
# numbers of the calls :func:`_filter_system_calls` filters.
ARCHES = {
    "x86_64": {"audit": 0xC000003E, "keyctl": 250, "add_key": 248, "request_key": 249,
               "flock": 73, "fcntl": 72, "inotify_init": 253, "inotify_init1": 294,
               "inotify_add_watch": 254, "fanotify_init": 300, "fanotify_mark": 301,
               "mincore": 27},
    "aarch64": {"audit": 0xC00000B7, "keyctl": 219, "add_key": 217, "request_key": 218,
                "flock": 32, "fcntl": 25, "inotify_init1": 26, "inotify_add_watch": 27,
                "fanotify_init": 262, "fanotify_mark": 263, "mincore": 232},
}  # fmt: skip
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING, KEY_SPEC_SESSION_KEYRING = 0, 1, -3


def _machine() -> str:
    return os.uname().machine  # not the platform module: 14 ms to import at each kernel start


def _syscall(name: str, *args) -> int:
    nr = ARCHES[_machine()][name]
    _libc.syscall.restype = ctypes.c_long
    return _libc.syscall(ctypes.c_long(nr), *args)


def _new_session_keyring() -> None:
    """Leave the grader's session keyring for a new, empty, anonymous one: keys are not
    namespaced, and a key the grader's session holds (``keyctl session``, a PAM login, a
    Kerberos ``KEYRING:`` cache) would otherwise be the sandbox's to read."""
    if _machine() not in ARCHES:
        raise OSError(f"no session keyring on {_machine()}: refusing to run")
    if _syscall("keyctl", ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None) >= 0:
        return
    err = ctypes.get_errno()
    # keyctl blocked for this process (a container's seccomp profile): then no key is reachable
    # either, which the same call for the current session keyring shows.
    probe = _syscall("keyctl", ctypes.c_long(KEYCTL_GET_KEYRING_ID),
                     ctypes.c_long(KEY_SPEC_SESSION_KEYRING), ctypes.c_long(0))  # fmt: skip
    if probe >= 0:
        raise OSError(err, f"cannot join a new session keyring: {os.strerror(err)}")


def _filter_system_calls() -> None:
    """A seccomp filter (after ``no_new_privs``; inherited by every child, never removable)
    that closes the channels between sandboxes graded at once through the files they share
    read-only (the Python installation): file locks (``flock``, ``fcntl`` record and
    open-file-description locks, ``F_GETLK``, leases, ``F_NOTIFY``) succeed without taking
    effect, so no lock is ever seen by another process; ``inotify``/``fanotify`` (open and read
    events of shared files) and ``mincore`` (their page-cache residency) are not available;
    and neither are keys (``keyctl``, ``add_key``, ``request_key``: keys are not namespaced).
    Everything else is allowed; foreign-ABI system calls (x32, 32-bit) are refused."""
    nr = ARCHES.get(_machine())
    if nr is None:
        raise OSError(f"no seccomp filter for {_machine()}: refusing to run")
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, JGE|K, BPF_RET|K
    allow, fake_success, enosys = 0x7FFF0000, 0x00050000, 0x00050000 | errno.ENOSYS
    refused = [n for k, n in nr.items() if k not in ("audit", "flock", "fcntl")]
    locks = (5, 6, 7, 36, 37, 38, 1024, 1026)  # F_[GS]ETLK[W], F_OFD_*, F_SETLEASE, F_NOTIFY
    prog: list[tuple[int, int, int, int]] = [
        (ld, 0, 0, 4), (jeq, 1, 0, nr["audit"]), (ret, 0, 0, enosys),  # another ABI: refused
        (ld, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, enosys),  # x32: refused
    ]  # fmt: skip
    for n in refused:
        prog += [(jeq, 0, 1, n), (ret, 0, 0, enosys)]
    prog += [(jeq, 0, 1, nr["flock"]), (ret, 0, 0, fake_success)]
    prog += [(jeq, 1, 0, nr["fcntl"]), (ret, 0, 0, allow), (ld, 0, 0, 24)]  # args[1], low word
    for cmd in locks:
        prog += [(jeq, 0, 1, cmd), (ret, 0, 0, fake_success)]
    prog += [(ret, 0, 0, allow)]

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]  # fmt: skip

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(prog))(*[Filter(*ins) for ins in prog])
    program = Program(len(prog), filters)
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0),
           "seccomp")  # fmt: skip


def _drop_privileges() -> None:
    for cap in range(64):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]  # fmt: skip

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3, all zero
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def probe() -> None:
    """Exit 0 iff this machine lets the grader make the namespaces and mounts of :func:`enter`."""
    import tempfile

    _unshare()
    child = os.fork()
    if child:
        os._exit(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", tempfile.gettempdir(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")
    os._exit(0)


if __name__ == "__main__" and sys.argv[1:] == ["probe"]:
    probe()

"""The grader's sandbox against attacks on the machine, on classmates and on the instructor (issue 29).

Each attack is written into a SOLVED lecture-01 notebook whose extra cell tries it and, if it
worked (or did anything unexpected), sabotages its own answers (every later cell becomes
``pass``). So a notebook that passes every exercise is proof, seen only through the grader's
verdict, that the attack ran to its end and failed — and that the sandbox still grades normal
work. The class is graded with ``python -m tools.grade`` as the grader runs for instructors:
as root (CI and containers) and, when the tests run as root, also as an unprivileged uid.

Fast tests: the escaping of control characters and the codec's allow-list.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import unicodedata
from pathlib import Path

import nbformat
import numpy as np
import pytest

from tools.grading import grade_kernel
from tools.grading.limits import group_limits
from tools.grading.results import Result, clean, print_summary, write_csv
from tools.grading.sandbox import sandbox_available

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "exercises" / "01_softmax.ipynb"
SOLUTION = ROOT / "solutions" / "01_softmax.ipynb"
IDS = ("1.1", "1.2", "1.3", "1.4")
USER_UID = 54321  # no account needed: the grader runs as this uid, with HOME in its own folder

# --- fast: what the grader prints and decodes ---------------------------------------------------


def test_control_characters_are_escaped_in_the_summary_and_the_csv(tmp_path, capsys):
    evil = "\r\x1b[2K  ✅ Exercise 1.1\x1b[0m\u202e\x07"
    r = Result(f"01_{evil}.ipynb", "01_softmax", {"1.1": (False, f"raised {evil}\nline two")},
               notes=[evil])  # fmt: skip
    print_summary(r)
    out = tmp_path / "grades.csv"
    write_csv([r, Result(evil, None, error=f"not gradable: {evil}")], out)
    for text in (capsys.readouterr().out, out.read_text()):
        assert not any(ch in text for ch in "\r\x1b\x07\u202e"), repr(text)
        assert "\\r\\x1b[2K" in text and "\\u202e" in text
    assert clean("a\nb") == "a\\nb" and clean("a\nb", keep_newlines=True) == "a\nb"


# Line and paragraph separators split a line for str.splitlines (a CSV read that way breaks);
# U+061C, zero-width and tag characters reorder or hide text: every Cc, Cf, Zl, Zp, Cs escaped.
UNICODE = "a\u2028b\u2029c\u061cd\U000e0041\U000e007fe\u200bf\ufeffg\x85h\ud800"


def test_unicode_separators_and_format_characters_are_escaped(tmp_path, capsys):
    r = Result(f"01_{UNICODE}.ipynb", "01_softmax", {"1.1": (False, f"raised {UNICODE}")})
    print_summary(r)
    out = tmp_path / "grades.csv"
    write_csv([r], out)
    text = out.read_text(errors="surrogateescape")
    for shown in (capsys.readouterr().out, text):
        assert not any(unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Cs") for ch in shown)
        assert "\\u2028" in shown and "\\U000e0041" in shown and "\\u061c" in shown
    assert len(text.splitlines()) == 2  # the header and one row


def test_only_listed_records_and_bit_generators_are_decoded():
    rng = np.random.default_rng(3)
    assert grade_kernel.decode(grade_kernel.encode(rng)).random() == rng.random()
    forged = grade_kernel.encode(rng)
    forged["state"]["v"][0][1] = "__class__"  # {"bit_generator": <a name of the notebook's>}
    with pytest.raises(ValueError, match="unknown bit generator"):
        grade_kernel.decode(forged)
    for kind in ("pickle", "__import__", None):
        with pytest.raises(ValueError, match="unknown kind"):
            grade_kernel.decode({"t": kind, "v": "os"})


def test_the_sandbox_leaves_the_graders_session_keyring():
    """Before the sandbox drops privileges it joins a new, empty session keyring: a key of the
    grader's session is no longer found (nor possessed); the seccomp filter then refuses keyctl
    altogether (the notebooks of `graded` try to read the key)."""
    code = _IN_KEYRING.split("os.execv")[0] + (
        "from tools.grading.grade_sandbox import _new_session_keyring\n"
        "def search():\n"
        "    return libc.syscall(L(nr['keyctl']), L(10), L(-3), b'user', b'grader-secret', L(0))\n"
        "before = search()\n_new_session_keyring()\nprint(KEYS, before > 0, search() > 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)  # fmt: skip
    if r.stdout.split()[:1] == ["False"]:
        pytest.skip("no keyrings here (keyctl refused, e.g. a container's seccomp profile)")
    assert r.stdout.split() == ["True", "True", "False"], r.stdout + r.stderr


# --- attack notebooks -------------------------------------------------------------------------

HOST_NAME = socket.gethostname()

ATTACKS = {
    # Host root and the kernel's tunables: refused (the student is not host uid 0, /proc/sys
    # is read-only); the host name is not the host's (a new UTS namespace). Files are only
    # opened for writing, never written.
    "proc_writes": f"""
        for p in ['/proc/sys/kernel/core_pattern', '/proc/sys/kernel/hostname',
                  '/proc/sys/vm/drop_caches', '/proc/sysrq-trigger', '/proc/sys/kernel/sysrq']:
            try:
                open(p, 'w').close()
                BROKEN.append('opened ' + p)
            except OSError as e:
                if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT):
                    BROKEN.append(repr(e))
        for line in open('/proc/self/uid_map'):
            inside, outside, count = map(int, line.split())
            if inside <= os.getuid() < inside + count and outside + os.getuid() - inside == 0:
                BROKEN.append('host root')
        if os.uname().nodename == {HOST_NAME!r}:
            BROKEN.append('the host name is the host UTS namespace')
    """,
    # Processes and threads: a fork bomb, then 300 threads; all bounded by the group limit.
    "fork_bomb": """
        import signal, threading, time
        if os.fork() == 0:
            try:
                while True:
                    try:
                        os.fork()
                    except OSError:
                        time.sleep(0.05)
            finally:
                os._exit(0)
        time.sleep(3)
        procs = sum(name.isdigit() for name in os.listdir('/proc'))
        os.kill(-1, signal.SIGKILL)  # everything else in this PID namespace
        time.sleep(0.5)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    time.sleep(0.1)
            except ChildProcessError:
                break
        pid = os.fork()  # the threads in a child: their stacks and arenas die with it
        if pid == 0:
            ev, threads = threading.Event(), []
            try:
                for _ in range(300):
                    t = threading.Thread(target=ev.wait)
                    t.start()
                    threads.append(t)
            except RuntimeError:
                pass
            finally:
                os._exit(min(len(threads), 255))
        threads = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if procs > 64 or not 0 < threads < 64:
            BROKEN.append(f'{procs} processes, {threads} threads')
        if procs < 10:
            BROKEN.append(f'the bomb did not run ({procs} processes)')
    """,
    # Memory of the group: three children of 800 MB at once under --memory-mb 1536.
    "three_children_800mb": """
        import select, signal, time
        r, w = os.pipe()
        kids = []
        for i in range(3):
            pid = os.fork()
            if pid == 0:
                try:
                    held = bytearray(b'\\x01') * (800 * 2**20)
                    os.write(w, b'1')
                    time.sleep(30)
                finally:
                    os._exit(0)
            kids.append(pid)
        os.close(w)
        # Until all three hold their 800 MB, or one is gone (killed: the limit held; without
        # this the survivors' 30 s sleep kept the pipe open and the grading waited it out).
        got, dead, deadline = b'', set(), time.time() + 60
        while len(got) < 3 and not dead and time.time() < deadline:
            if select.select([r], [], [], 0.2)[0]:
                chunk = os.read(r, 3)
                if not chunk:
                    break
                got += chunk
            dead = {pid for pid in kids if os.waitpid(pid, os.WNOHANG)[0]}
        for pid in kids:
            if pid in dead:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
        if len(got) >= 3:
            BROKEN.append('three children held 2.4 GB at once')
    """,
    # The grader's session keyring (and the user and user-session keyrings): every key listed
    # there read, and the grader's key searched for by name. Nothing is reachable.
    "session_keyring": """
        import ctypes, platform, struct
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        L, KEYCTL = ctypes.c_long, {'x86_64': 250, 'aarch64': 219}[platform.machine()]
        buf = ctypes.create_string_buffer(65536)
        got = []
        for ring in (-3, -4, -5, -2, -1):  # session, user, user-session, process, thread
            n = libc.syscall(L(KEYCTL), L(11), L(ring), buf, L(65536))  # KEYCTL_READ
            for key in struct.unpack(f'{max(n, 0) // 4}i', buf.raw[:max(n, 0) // 4 * 4]):
                m = libc.syscall(L(KEYCTL), L(11), L(key), buf, L(65536))
                got.append(buf.raw[:max(m, 0)])
        key = libc.syscall(L(KEYCTL), L(10), L(-3), b'user', b'grader-secret', L(0))  # SEARCH
        if key > 0:
            m = libc.syscall(L(KEYCTL), L(11), L(key), buf, L(65536))
            got.append(buf.raw[:max(m, 0)])
        try:
            got.append(open('/proc/keys', 'rb').read())
        except OSError:
            pass
        if any(b'grader-secret' in g for g in got):
            BROKEN.append('read the grader key')
    """,
    # Disk: 4 files of 50 MB in each writable place; in all at most the sandbox's tmpfs.
    "disk_200mb": """
        written, files = 0, []
        for d in [os.getcwd(), os.environ['HOME'], '/tmp', '/dev/shm']:
            for i in range(4):
                path = f'{d}/blob{i}'
                files.append(path)
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
                    try:
                        for _ in range(50):
                            written += os.write(fd, b'\\x02' * 2**20)
                    finally:
                        os.close(fd)
                except OSError as e:
                    if e.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                        BROKEN.append(repr(e))
        for path in files:
            try:
                os.remove(path)
            except OSError:
                pass
        if written >= 200 * 2**20 or written < 50 * 2**20:
            BROKEN.append(f'{written / 2**20:.0f} MB written')
    """,
}


def _wrapped(attack: str) -> str:
    return (
        "import errno, os\nBROKEN = []\ntry:\n"
        + textwrap.indent(textwrap.dedent(attack).strip(), "    ")
        + "\nexcept Exception as exc:\n    BROKEN.append(repr(exc))\n"
        "if BROKEN:  # the attack worked: every later cell becomes `pass`\n"
        "    get_ipython().input_transformers_post.append(lambda lines: ['pass\\n'])\n"
    )


def _with_cell(source: str, path: Path = SOLUTION, at: int = 3):
    nb = copy.deepcopy(nbformat.read(path, as_version=4))
    nb.cells.insert(at, nbformat.v4.new_code_cell(source))
    return nb


SHM_KEY = 0x5EED29
_SHM = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.shmat.restype = ctypes.c_void_p\nlibc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]\n"
)
# ... the classmate's untouched notebook runs whatever it finds there in every answer cell.
SHM_READER = _SHM + (
    f"shm = libc.shmget({SHM_KEY}, 0, 0)\n"
    "if shm >= 0:\n"
    "    exec(ctypes.string_at(libc.shmat(shm, None, 0)).decode())\n"
)


def _shm_notebooks():
    """The solved notebook posts its answers in SysV shared memory (and leaves the segment)."""
    solved = nbformat.read(SOLUTION, as_version=4)
    answers = "\n".join(
        c.source
        for c in solved.cells
        if c.cell_type == "code" and ("def " in c.source or "dims" in c.source)
    )
    writer = _SHM + (
        f"data = {answers!r}.encode()\n"
        f"shm = libc.shmget({SHM_KEY}, len(data) + 1, 0o1666)\n"  # IPC_CREAT | 0666
        "ctypes.memmove(libc.shmat(shm, None, 0), data, len(data))\n"
    )
    reader = nbformat.read(STUB, as_version=4)
    for cell in reader.cells:
        if 'raise NotImplementedError("Exercise' in cell.source:
            cell.source = SHM_READER
    return _with_cell(writer), reader


def _host_shm_keys() -> set[int]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[0]) for line in lines}


# Two classmates graded at the same time, each holding locks on three stdlib files (flock, a
# POSIX record lock, an open-file-description lock) and listening for the other's: probing its
# files' locks, and watching one of its files with inotify while opening one of its own. Each
# listens for up to 6 s; whoever hears the other sabotages its answers.
_CHANNEL = """
    import fcntl, importlib, struct, time
    def path(name):
        return importlib.import_module(name).__file__
    MINE, THEIRS = {mine!r}, {theirs!r}
    held = [open(path(m), 'rb') for m in MINE]
    fcntl.flock(held[0], fcntl.LOCK_SH)
    fcntl.fcntl(held[1], fcntl.F_SETLK, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))
    fcntl.fcntl(held[2], 37, struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))  # F_OFD_SETLK
    probe = [open(path(t), 'rb') for t in THEIRS]
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        watch = libc.inotify_init1(os.O_NONBLOCK)
        if watch >= 0:
            libc.inotify_add_watch(watch, path(THEIRS[3]).encode(), 0x20)  # IN_OPEN
    except (OSError, AttributeError):
        watch = -1
    heard, deadline = [], time.time() + 6
    while not heard and time.time() < deadline:
        open(path(MINE[3]), 'rb').close()  # an inotify "bit" for the other
        try:
            fcntl.flock(probe[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(probe[0], fcntl.LOCK_UN)
        except BlockingIOError:
            heard.append('flock')
        for fh, cmd in ((probe[1], fcntl.F_GETLK), (probe[2], 36)):  # F_OFD_GETLK
            ask = struct.pack('hhqqi4x', fcntl.F_WRLCK, 0, 0, 0, 0)
            if struct.unpack('hhqqi4x', fcntl.fcntl(fh, cmd, ask))[0] == fcntl.F_RDLCK:
                heard.append(f'fcntl {{cmd}}')
        if watch >= 0:
            try:
                if os.read(watch, 4096):
                    heard.append('inotify')
            except BlockingIOError:
                pass
        time.sleep(0.05)
    if heard:
        BROKEN.append(f'heard the classmate through {{heard}}')
"""
CHANNEL_FILES = (("base64", "string", "textwrap", "shlex"), ("struct", "random", "bisect", "glob"))


def _channel_notebooks():
    a, b = CHANNEL_FILES
    return (_with_cell(_wrapped(_CHANNEL.format(mine=a, theirs=b))),
            _with_cell(_wrapped(_CHANNEL.format(mine=b, theirs=a))))  # fmt: skip


FORGERY = """
import os
for fd in range(256):
    try:
        if not os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):
            os.write(fd, b'\\n  FORGED 4/4 exercises passed\\n' * 10000)
    except OSError:
        pass
os._exit(1)
"""
ESCAPES = (
    "def stable_softmax(x):\n    raise ValueError('\\r\\x1b[2K  ✅ Exercise 1.1 passed\\x1b[0m')"
)


def _class(folder: Path, with_memory: bool) -> list[Path]:
    paths = []
    for name, attack in ATTACKS.items():
        if name == "three_children_800mb" and not with_memory:
            continue
        paths.append(_save(folder / f"01_{name}.ipynb", _with_cell(_wrapped(attack))))
    writer, reader = _shm_notebooks()
    paths.append(_save(folder / "01_shm_a_writer.ipynb", writer))
    paths.append(_save(folder / "01_shm_b_reader.ipynb", reader))
    paths.append(_save(folder / "01_forged_log.ipynb", _with_cell(FORGERY, STUB)))
    escapes = nbformat.read(SOLUTION, as_version=4)
    cell = next(c for c in escapes.cells if "def stable_softmax" in c.source)
    cell.source = ESCAPES
    paths.append(_save(folder / "01_escapes\x1b[32m\r.ipynb", escapes))
    return paths


def _save(path: Path, nb) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))
    path.chmod(0o644)
    return path


def _as_user_prefix(uid: int) -> list[str]:
    """A command prefix that runs as ``uid`` (no groups, no capabilities) where the Python
    installation and this repository are reachable: folders on their paths that others may not
    enter (e.g. /root) are replaced, in a private mount namespace, by a tmpfs holding only them."""
    script, k = [], 0
    for target in {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, ROOT)}:
        parts = Path(target).parts
        for i in range(1, len(parts) - 1):
            closed = Path(*parts[: i + 1])
            if not os.stat(closed).st_mode & stat.S_IXOTH:
                keep = Path(*parts[: i + 2])
                script += [f"mkdir -p /tmp/.keep{k} && mount --rbind '{keep}' /tmp/.keep{k}",
                           f"mountpoint -q '{closed}' || mount -t tmpfs -o mode=755 tmpfs '{closed}'",
                           f"mkdir -p '{keep}' && mount --move /tmp/.keep{k} '{keep}' && rmdir /tmp/.keep{k}"]  # fmt: skip
                k += 1
                break
    script.append(f'exec setpriv --reuid={uid} --regid={uid} --clear-groups --inh-caps=-all "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-ec", "; ".join(script), "-"]


# The grader runs in a session keyring holding a `user` key, as `keyctl session`, a PAM login or
# a Kerberos KEYRING: cache give one (issue 40: a notebook read it with KEYCTL_READ).
KEY_SECRET = "grader-secret-" + os.urandom(6).hex()
_IN_KEYRING = f"""
import ctypes, os, platform, sys
nr = {{"x86_64": {{"keyctl": 250, "add_key": 248}}, "aarch64": {{"keyctl": 219, "add_key": 217}}}}[
    platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
secret = {KEY_SECRET!r}.encode()
KEYS = (libc.syscall(L(nr['keyctl']), L(1), b'grader-session') > 0  # KEYCTL_JOIN_SESSION_KEYRING
        and libc.syscall(L(nr['add_key']), b'user', b'grader-secret', secret,
                         ctypes.c_size_t(len(secret)), L(-3)) > 0)  # no keys here: grade anyway
os.execv(sys.executable, [sys.executable, '-m', 'tools.grade', *sys.argv[1:]])
"""


def _grade(paths: list[Path], out: Path, prefix: list[str], *args: str) -> tuple[str, dict]:
    cmd = [*prefix, sys.executable, "-c", _IN_KEYRING, *map(str, paths), "--csv", str(out),
           "--timeout", "120", *args]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(out.parent)}
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert out.exists(), r.stdout + r.stderr
    rows = {Path(row["notebook"]).name: row for row in csv.DictReader(out.open(newline=""))}
    return r.stdout + r.stderr, rows


MODES = ["root", "user"] if os.geteuid() == 0 else ["user"]


@pytest.fixture(scope="module", params=MODES)
def graded(request):
    if not sandbox_available()[0]:
        pytest.skip("no sandbox on this machine")
    folder = Path(tempfile.mkdtemp(prefix="attacks-"))
    folder.chmod(0o777)  # the unprivileged grader writes its CSV here
    try:
        prefix = _as_user_prefix(USER_UID) if request.param == "user" and os.geteuid() == 0 else []
        # A group memory limit needs a cgroup: the root grader makes one here; as a user it
        # does only where cgroups are delegated, and otherwise says so (INSTRUCTORS.md).
        with_memory = request.param == "root" and group_limits().startswith("cgroup")
        before = _host_shm_keys()
        paths = _class(folder / "class", with_memory)
        # sequentially (--jobs 1): the reader is graded after the writer
        text, rows = _grade(paths, folder / "grades.csv", prefix, "--jobs", "1",
                            "--memory-mb", "1536")  # fmt: skip
        yield {"text": text, "rows": rows, "mode": request.param, "shm": _host_shm_keys() - before,
               "with_memory": with_memory}  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", params=MODES)
def graded_pair(request):
    """The two classmates graded in parallel (--jobs 2)."""
    if not sandbox_available()[0]:
        pytest.skip("no sandbox on this machine")
    folder = Path(tempfile.mkdtemp(prefix="channel-"))
    folder.chmod(0o777)
    try:
        prefix = _as_user_prefix(USER_UID) if request.param == "user" and os.geteuid() == 0 else []
        first, second = _channel_notebooks()
        paths = [_save(folder / "class" / "01_channel_a.ipynb", first),
                 _save(folder / "class" / "01_channel_b.ipynb", second)]  # fmt: skip
        yield _grade(paths, folder / "grades.csv", prefix, "--jobs", "2")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _verdicts(row) -> tuple:
    return tuple(row[f"exercise {e}"] for e in IDS)


@pytest.mark.slow
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_attack_fails_and_the_notebook_is_still_graded(graded, attack):
    if attack == "three_children_800mb" and not graded["with_memory"]:
        pytest.skip(f"no group memory limit without a cgroup ({graded['mode']})")
    row = graded["rows"][f"01_{attack}.ipynb"]
    assert _verdicts(row) == ("pass",) * 4, (row, graded["text"][-3000:])


@pytest.mark.slow
def test_the_graders_key_never_reaches_the_sandbox_or_the_report(graded):
    row = graded["rows"]["01_session_keyring.ipynb"]
    assert _verdicts(row) == ("pass",) * 4, (row, graded["text"][-3000:])
    assert KEY_SECRET not in graded["text"] and KEY_SECRET not in json.dumps(graded["rows"])


@pytest.mark.slow
def test_no_channel_between_students_through_sysv_shared_memory(graded):
    rows = graded["rows"]
    assert _verdicts(rows["01_shm_a_writer.ipynb"]) == ("pass",) * 4, rows
    reader = rows["01_shm_b_reader.ipynb"]
    assert _verdicts(reader) == ("fail",) * 4, reader
    assert "not defined" in reader["reasons"]
    assert SHM_KEY not in graded["shm"], "the segment outlived grading on the host"


@pytest.mark.slow
def test_no_channel_between_classmates_graded_at_once_through_shared_files(graded_pair):
    """File locks and inotify on the read-only files both sandboxes share (issue 40: 8 stdlib
    files locked as the bits of a byte passed 3 of 4 answers): neither notebook hears the other."""
    text, rows = graded_pair
    for name in ("01_channel_a.ipynb", "01_channel_b.ipynb"):
        assert _verdicts(rows[name]) == ("pass",) * 4, (name, rows[name], text[-3000:])
        assert 6 <= float(rows[name]["seconds"]), rows[name]  # each listened its 6 s


@pytest.mark.slow
def test_the_log_cannot_be_forged_and_output_is_escaped(graded):
    rows, text = graded["rows"], graded["text"]
    forged = rows["01_forged_log.ipynb"]
    assert _verdicts(forged) == ("fail",) * 4
    assert "the kernel died (exit code 1)" in forged["reasons"], forged
    assert "FORGED" not in text and "FORGED" not in json.dumps(rows)
    escaped = next(r for name, r in rows.items() if name.startswith("01_escapes"))
    assert escaped["exercise 1.1"] == "fail" and "\\x1b[2K" in escaped["reasons"]
    for shown in (text, json.dumps(rows, ensure_ascii=False)):
        assert "\x1b" not in shown and "\r" not in shown
    assert "01_escapes\\x1b[32m\\r.ipynb" in text

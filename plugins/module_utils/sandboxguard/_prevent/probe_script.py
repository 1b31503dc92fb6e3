# GENERATED from python/src/sandboxguard/_prevent/probe_script.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The program the seccomp probe runs inside a throwaway container (``python3 -c``).

It tries each attempt of :data:`ATTEMPTS` in a fresh directory and prints one JSON line per
attempt: ``{"name", "succeeded", "errno", "detail"}``; ``succeeded`` says whether what the
attempt makes was made (a setid bit, a device node, a capability xattr) or what it runs ran,
read back with lstat/getxattr rather than trusted from an exit code. The probe (probe.py)
decides what each outcome means. Standard library only (the image needs python3; chmod, install,
mknod and setcap are used when the image has them, else the same syscall).
"""

# (name, words for people): the order of the report
ATTEMPTS = (
    ("chmod_4755", "chmod 4755 FILE"),
    ("chmod_2755", "chmod 2755 FILE"),
    ("install_4755", "install -m 4755 SRC DST"),
    ("open_creat_04755", "os.open(PATH, O_CREAT|O_WRONLY, 0o4755)"),
    ("fchmodat2_4755", "fchmodat2(AT_FDCWD, FILE, 04755, 0) through syscall(452)"),
    ("mknod_c", "mknod NODE c 1 3"),
    ("setcap", "setcap cap_net_raw+ep FILE (or the security.capability xattr)"),
    ("chmod_755", "chmod 755 FILE"),
    ("mkdir_p", "mkdir -p a/b/c"),
    ("venv", "python3 -m venv --without-pip DIR, then DIR/bin/python runs"),
    ("unshare_user", "unshare(CLONE_NEWUSER) (unshare -U)"),
    ("keyctl", "keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING)"),
    ("io_uring_setup", "io_uring_setup(1, params)"),
)

SCRIPT = r'''
import ctypes, errno, json, os, platform, shutil, stat, subprocess, sys, tempfile
libc = ctypes.CDLL(None, use_errno=True)
NR = {"x86_64": {"fchmodat2": 452, "keyctl": 250, "io_uring_setup": 425},
      "aarch64": {"fchmodat2": 452, "keyctl": 219, "io_uring_setup": 425}}.get(platform.machine(), {})
WORK = tempfile.mkdtemp(prefix="sgprobe-")
NAMES = {os.strerror(code): name for code, name in errno.errorcode.items()}

def emit(name, succeeded, err=None, detail=""):
    print(json.dumps({"name": name, "succeeded": bool(succeeded), "errno": err, "detail": detail[-300:]}), flush=True)

def errname(code):
    return errno.errorcode.get(code, "E%d" % code) if code else None

def fresh(name, mode=0o644):
    path = os.path.join(WORK, name)
    with open(path, "w") as handle:
        handle.write("x\n")
    os.chmod(path, mode)
    return path

def tool(argv):
    if shutil.which(argv[0]) is None:
        return None, None, "%s is not in the image" % argv[0]
    done = subprocess.run(argv, capture_output=True, timeout=120)
    text = done.stderr.decode("utf-8", "replace").strip()
    found = next((name for message, name in NAMES.items() if message and message in text), None)
    return done.returncode, found, text

def mode(path):
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None

def setid(path):
    return bool((mode(path) or 0) & 0o6000)

def syscall(nr, *args):
    if nr is None:
        return None, "ENOSYS"
    result = libc.syscall(ctypes.c_long(nr), *args)
    return result, (errname(ctypes.get_errno()) if result < 0 else None)

def attempt(name, function):
    try:
        function(name)
    except Exception as exc:
        emit(name, False, getattr(exc, "errno", None) and errname(exc.errno), "%s: %s" % (type(exc).__name__, exc))

def chmod_setid(bits):
    def run(name):
        path = fresh(name)
        rc, err, text = tool(["chmod", bits, path])
        if rc is None:
            try:
                os.chmod(path, int(bits, 8))
            except OSError as exc:
                err, text = errname(exc.errno), str(exc)
        emit(name, setid(path), err, text)
    return run

def install_setid(name):
    source, target = fresh(name + ".src"), os.path.join(WORK, name)
    rc, err, text = tool(["install", "-m", "4755", source, target])
    emit(name, setid(target), err, text if rc is not None else text + " (not tried)")

def open_creat(name):
    path = os.path.join(WORK, name)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o4755))
        emit(name, setid(path), None, "created with mode %o" % (mode(path) or 0))
    except OSError as exc:
        emit(name, setid(path), errname(exc.errno), str(exc))

def fchmodat2(name):
    path = fresh(name)
    result, err = syscall(NR.get("fchmodat2"), ctypes.c_int(-100), path.encode(), ctypes.c_uint(0o4755),
                          ctypes.c_uint(0))
    emit(name, setid(path), err, "returned %s" % result)

def mknod_char(name):
    path = os.path.join(WORK, name)
    rc, err, text = tool(["mknod", path, "c", "1", "3"])
    if rc is None:
        try:
            os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        except OSError as exc:
            err, text = errname(exc.errno), str(exc)
    emit(name, stat.S_ISCHR(mode(path) or 0), err, text)

def set_caps(name):
    path = fresh(name)
    rc, err, text = tool(["setcap", "cap_net_raw+ep", path])
    if rc is None:
        # struct vfs_cap_data, revision 2, effective: cap_net_raw (13) permitted
        blob = (0x02000001).to_bytes(4, "little") + (1 << 13).to_bytes(4, "little") + bytes(12)
        try:
            os.setxattr(path, "security.capability", blob)
        except OSError as exc:
            err, text = errname(exc.errno), str(exc)
    try:
        made = bool(os.getxattr(path, "security.capability"))
    except OSError:
        made = False
    emit(name, made, err, text)

def chmod_plain(name):
    path = fresh(name, 0o600)
    rc, err, text = tool(["chmod", "755", path])
    emit(name, (mode(path) or 0) & 0o7777 == 0o755, err, text)

def mkdir_p(name):
    path = os.path.join(WORK, name, "a", "b", "c")
    rc, err, text = tool(["mkdir", "-p", path])
    if rc is None:
        os.makedirs(path)
    emit(name, os.path.isdir(path), err, text)

def venv(name):
    path = os.path.join(WORK, name)
    done = subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], capture_output=True, timeout=120)
    if done.returncode:
        emit(name, False, None, done.stderr.decode("utf-8", "replace").strip())
        return
    ran = subprocess.run([os.path.join(path, "bin", "python"), "-c", "print('ok')"], capture_output=True, timeout=60)
    emit(name, ran.stdout.strip() == b"ok", None, ran.stderr.decode("utf-8", "replace").strip())

def unshare_user(name):
    pid = os.fork()
    if pid == 0:
        code = 0 if libc.unshare(0x10000000) == 0 else ctypes.get_errno()
        os._exit(code)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) if hasattr(os, "waitstatus_to_exitcode") else \
        os.waitpid(pid, 0)[1] >> 8
    emit(name, code == 0, errname(code) if code else None, "")

def keyctl(name):
    result, err = syscall(NR.get("keyctl"), ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(0))
    emit(name, result is not None and result >= 0, err, "returned %s" % result)

def io_uring(name):
    params = ctypes.create_string_buffer(120)
    result, err = syscall(NR.get("io_uring_setup"), ctypes.c_uint(1), params)
    if result is not None and result >= 0:
        os.close(result)
    emit(name, result is not None and result >= 0, err, "returned %s" % result)

for name, function in (("chmod_4755", chmod_setid("4755")), ("chmod_2755", chmod_setid("2755")),
                       ("install_4755", install_setid), ("open_creat_04755", open_creat),
                       ("fchmodat2_4755", fchmodat2), ("mknod_c", mknod_char), ("setcap", set_caps),
                       ("chmod_755", chmod_plain), ("mkdir_p", mkdir_p), ("venv", venv),
                       ("unshare_user", unshare_user), ("keyctl", keyctl), ("io_uring_setup", io_uring)):
    attempt(name, function)
print(json.dumps({"done": True}), flush=True)
'''

# GENERATED from python/src/sandboxguard/_core/bytecode.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Bytecode kept between module runs on a host, for the library imported from an AnsiballZ zip.

Why (issue 26, item 5): Ansible ships a module and the module_utils it imports as source in
a zip, and Python compiles every module it imports from a zip again at every run (zipimport
writes no ``__pycache__``). For ``audit_info`` that was about half of its own CPU on a host:
its checks' work is milliseconds (home_mode 0.2 ms, leaks 0.6 ms on a warm run), compiling
the library they import was 40-90 ms each (home_mode's YAML editor and configurator even
when no mode is asked for).

What: :func:`install` (called by the package's ``__init__`` only when it is imported from a
zip by root) puts a finder first on ``sys.meta_path`` for the package's own modules; each
module's source is read from the zip as before, and its code object comes from
``CACHE_DIR/<sha256 of the interpreter's magic number and the source>`` when present, else it
is compiled and stored there. The key is the content: a changed library, another Python,
never reads a stale entry.

Security: root executes what it reads there, so the cache is reached as root's own files
are: ``/var/cache/sandboxguard/bytecode`` opened component by component from ``/`` with
O_NOFOLLOW, each directory owned by root and writable by nobody else (made 0700 when
missing); an entry is used only when it is a regular file owned by root, writable by
nobody else, opened O_NOFOLLOW below that descriptor; written to a new name (O_EXCL) and
renamed into place. Anything else (not root, a directory that fails the check, a full or
read-only disk, a malformed entry) means no cache: the source is compiled as it always was.
"""
import hashlib
import marshal
import os
import stat
import sys
import types
import zipimport
from importlib.machinery import ModuleSpec
from importlib.util import MAGIC_NUMBER

# imported here, before the finder is installed: a store that imported it on a miss would load
# it through the finder, whose miss would store it, importing it half-initialised
from . import atomicfile

CACHE_DIR = "/var/cache/sandboxguard/bytecode"
MAX_ENTRY_BYTES = 8 << 20
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # readable: atomicfile fsyncs the directory


def open_cache_dir(path=CACHE_DIR, create=True):
    """A descriptor of the directory ``path``, each component owned by root and writable by nobody
    else, reached without following a link (missing ones made 0700 when ``create``); None
    when that cannot be (not root, a component that fails the check)."""
    if os.geteuid() != 0:
        return None
    fd = os.open("/", _DIR)
    try:
        for name in [part for part in path.split("/") if part]:
            try:
                child = os.open(name, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o700, dir_fd=fd)
                child = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = child
            st = os.fstat(fd)
            if st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise PermissionError("%s: not root's alone" % name)
    except OSError:
        os.close(fd)
        return None
    return fd


def entry_name(source):
    """The cache entry of ``source`` (bytes) for this interpreter (pure)."""
    return hashlib.sha256(MAGIC_NUMBER + b"\0" + source).hexdigest()


def load(dir_fd, name):
    """The code object stored as ``name`` below ``dir_fd``, or None (missing, not root's alone,
    too big, not a code object)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        unsafe = not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if unsafe or st.st_size > MAX_ENTRY_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_ENTRY_BYTES + 1)
    finally:
        os.close(fd)
    try:
        code = marshal.loads(data)  # noqa: S302 - root's own entry, proven above (the module's doc)
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


def store(dir_fd, name, code):
    """Write ``code`` as ``name`` below ``dir_fd`` (atomicfile.write_at: a new file renamed into
    place, root's, 0600); a failure leaves nothing behind and is not an error (the cache is
    only an optimisation: nothing it raises may fail the module)."""
    try:
        atomicfile.write_at(dir_fd, name, marshal.dumps(code), mode=0o600)
    except Exception:  # noqa: S110  # pylint: disable=broad-except  # a full disk, a read-only /var: no cache
        pass


class _Loader:
    """The zip's own loader, with the code object from the cache."""

    def __init__(self, inner, dir_fd, origin):
        self.inner, self.dir_fd, self.origin = inner, dir_fd, origin

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(self.get_code(module.__name__), module.__dict__)  # noqa: S102 - what every loader does

    def get_source(self, name):
        return self.inner.get_source(name)

    def is_package(self, name):
        return self.inner.is_package(name)

    def get_code(self, name):
        origin = self.origin  # not zipimporter.get_filename: it compiles the module to answer
        source = self.inner.get_source(name)
        if source is None:  # no source (bytecode only): what the zip would do
            return self.inner.get_code(name)
        data = source.encode("utf-8", "surrogateescape")
        key = entry_name(data)
        code = load(self.dir_fd, key)
        if code is None:
            code = compile(data, origin, "exec", dont_inherit=True)
            store(self.dir_fd, key, code)
        else:
            import _imp  # noqa: PLC0415 - what importlib's own loader uses for the same fix

            _imp._fix_co_filename(code, origin)  # tracebacks name this run's file
        return code


class _Finder:
    """Finds ``prefix``'s modules in the zip entries of their parent's ``__path__``, with _Loader.

    Not through the path finder: zipimporter.find_spec compiles the module to learn its file
    name (spec_from_file_location asks get_filename), which is the very cost saved here."""

    def __init__(self, prefix, dir_fd):
        self.prefix, self.dir_fd, self.importers = prefix, dir_fd, {}

    def _importer(self, entry):
        if entry not in self.importers:
            try:
                self.importers[entry] = zipimport.zipimporter(entry)
            except (zipimport.ZipImportError, OSError, TypeError, ValueError):
                self.importers[entry] = None
        return self.importers[entry]

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(self.prefix) or not path:
            return None
        tail = name.rpartition(".")[2]
        for entry in path:
            importer = self._importer(entry)
            if importer is None:
                continue
            try:
                package = importer.is_package(name)
            except zipimport.ZipImportError:  # not in this entry
                continue
            base = os.path.join(importer.archive, importer.prefix, tail)
            origin = base + ("/__init__.py" if package else ".py")
            spec = ModuleSpec(name, _Loader(importer, self.dir_fd, origin), origin=origin, is_package=package)
            if package:
                spec.submodule_search_locations = [base]
            spec.has_location = True
            return spec
        return None

    def invalidate_caches(self):
        pass


def install(package, loader):
    """Cache the bytecode of ``package``'s modules (see the module's doc) when ``loader`` (the
    package's own) is a zipimporter and this process is root; otherwise nothing. Once. When
    ``package`` is the collection's copy (``...plugins.module_utils.sandboxguard``), the
    collection's other module_utils imported after it are covered too. True when installed."""
    if not isinstance(loader, zipimport.zipimporter):
        return False
    # the collection's other module_utils (the modules' glue) too, when the package is its copy
    parent, _dot, last = package.rpartition(".")
    prefix = parent + "." if parent.endswith(".plugins.module_utils") and last == "sandboxguard" else package + "."
    if any(isinstance(finder, _Finder) and finder.prefix == prefix for finder in sys.meta_path):
        return True
    dir_fd = open_cache_dir()
    if dir_fd is None:
        return False
    sys.meta_path.insert(0, _Finder(prefix, dir_fd))
    return True

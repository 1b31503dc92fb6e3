# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Which unix sockets are asked at all (issue 26, item 2).

A socket is asked only when it is a socket and it and every directory above it belong to
root (or the caller) or to the uid whose runtime directory (/run/user/<uid>) holds it,
proven through descriptors, no symlink followed unless root owns it; a socket that fails
is an engine error saying why. The accepted /run/user case with a real throwaway user is
in tests/integration/test_engine_isolation.py.
"""
import os
import socket

import pytest
from sandboxguard._core import engine_http
from sandboxguard._core.engine_api import Client, EngineError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
OTHER = 4242


def listen(path):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    return server


def test_runtime_uid_is_read_from_the_path():
    assert engine_http.runtime_uid("/run/user/1000/podman/podman.sock") == 1000
    assert engine_http.runtime_uid("/run/user/1000") == 1000
    assert engine_http.runtime_uid("/run/user/x/podman.sock") is None
    assert engine_http.runtime_uid("/run/podman/podman.sock") is None
    assert engine_http.runtime_uid("/var/run/user/1000/podman.sock") is None


def test_a_socket_of_roots_in_roots_directories_is_opened(tmp_path):
    server = listen(tmp_path / "ok.sock")
    try:
        fd, owners = engine_http.open_socket(str(tmp_path / "ok.sock"))
        os.close(fd)
        assert 0 in owners
    finally:
        server.close()


def test_a_directory_of_another_user_outside_its_runtime_dir_is_refused(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    server = listen(home / "podman.sock")
    os.chown(home, OTHER, OTHER)
    try:
        with pytest.raises(EngineError, match=r"not asked: directory .*/home belongs to uid 4242"):
            engine_http.open_socket(str(home / "podman.sock"))
        with pytest.raises(EngineError, match="not asked"):
            Client("unix://%s" % (home / "podman.sock")).ping()
    finally:
        server.close()


def test_a_socket_of_another_user_is_refused(tmp_path):
    server = listen(tmp_path / "their.sock")
    os.lchown(tmp_path / "their.sock", OTHER, OTHER)
    try:
        with pytest.raises(EngineError, match="the socket belongs to uid 4242"):
            engine_http.open_socket(str(tmp_path / "their.sock"))
    finally:
        server.close()


def test_a_symlink_not_owned_by_root_is_not_followed(tmp_path):
    server = listen(tmp_path / "real.sock")
    os.symlink(str(tmp_path / "real.sock"), str(tmp_path / "link.sock"))
    os.lchown(tmp_path / "link.sock", OTHER, OTHER)
    try:
        with pytest.raises(EngineError, match="is a symlink not owned by root"):
            engine_http.open_socket(str(tmp_path / "link.sock"))
    finally:
        server.close()


def test_a_root_owned_symlink_is_followed_to_a_proven_socket(tmp_path):
    # /var/run -> /run, podman-docker's docker.sock -> podman.sock
    server = listen(tmp_path / "real.sock")
    os.symlink("real.sock", str(tmp_path / "link.sock"))
    try:
        fd, _owners = engine_http.open_socket(str(tmp_path / "link.sock"))
        assert os.path.samestat(os.fstat(fd), os.stat(str(tmp_path / "real.sock")))
        os.close(fd)
    finally:
        server.close()


def test_a_file_that_is_not_a_socket_is_refused(tmp_path):
    (tmp_path / "plain.sock").write_text("")
    with pytest.raises(EngineError, match="is not a socket"):
        engine_http.open_socket(str(tmp_path / "plain.sock"))


def test_a_directory_others_can_write_is_refused_unless_sticky(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    server = listen(shared / "e.sock")
    try:
        os.chmod(shared, 0o777)
        with pytest.raises(EngineError, match="writable by others"):
            engine_http.open_socket(str(shared / "e.sock"))
        os.chmod(shared, 0o1777)  # /tmp: only the owner of a name can replace it
        fd, _owners = engine_http.open_socket(str(shared / "e.sock"))
        os.close(fd)
    finally:
        server.close()


def test_dot_dot_in_a_socket_path_is_refused(tmp_path):
    with pytest.raises(EngineError, match=r"'\.\.'"):
        engine_http.open_socket(str(tmp_path) + "/../x.sock")


def test_the_connection_goes_through_the_proven_descriptor(tmp_path, monkeypatch):
    from fake_engine import FakeEngine

    with FakeEngine(str(tmp_path / "e.sock"), "healthy"):
        seen = []
        real = engine_http.socket.socket.connect

        def connect(self, address):
            seen.append(address)
            return real(self, address)

        monkeypatch.setattr(engine_http.socket.socket, "connect", connect)
        Client("unix://%s" % (tmp_path / "e.sock")).ping()
    assert seen and all(a.startswith("/proc/self/fd/") for a in seen)

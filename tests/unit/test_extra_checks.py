# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The extra checks of our own (tools/extra_checks.py) and the license header tool
(tools/license_headers.py): what each refuses, what each accepts, and that the repository
passes the header check as it stands."""

import pytest
import repo_scan as scan

extra_checks, license_headers = scan.tool("extra_checks"), scan.tool("license_headers")

KNOWN = {"galaxy.yml", "plugins/modules/setid_strip.py", "roles/bwrap/tasks/main.yml", "docs/awx.md"}


def problems(*names):
    return extra_checks.tarball_problems([(n, not n.endswith("/")) for n in names], KNOWN)


def test_a_clean_tarball_has_no_problem():
    assert problems("MANIFEST.json", "FILES.json", "plugins/", "plugins/modules/", "plugins/modules/setid_strip.py",
                    "./roles/bwrap/tasks/main.yml", "docs/awx.md") == []


def test_paths_the_collection_never_ships_are_refused_whatever_build_ignore_says():
    found = problems("benchmarks/results/2026-12-01-fleet.txt", ".venv/bin/python", "tests/integration/test_fleet.py",
                     ".cache/x", "tools/release.sh", "molecule/default/molecule.yml", ".nox/x", "noxfile.py")
    assert len(found) == 8 and all("never part of the collection" in p for p in found)


def test_editor_merge_and_python_leftovers_are_refused_anywhere():
    found = problems("plugins/modules/.setid_strip.py.swp", "roles/bwrap/tasks/main.yml~", "docs/awx.md.orig",
                     "plugins/filter/__pycache__/inputs.cpython-311.pyc", "docs/.#awx.md", "docs/.DS_Store",
                     "python/src/sandboxguard.egg-info/PKG-INFO")
    assert len(found) == 7 and all("unwanted file" in p for p in found)


def test_a_file_git_ignores_or_does_not_know_is_refused():
    assert problems("docs/local-notes.md") == [
        "docs/local-notes.md: a file git ignores or does not know; the build took it from the working tree"]


def test_carriage_returns_are_found_with_their_line(tmp_path):
    (tmp_path / "unix.md").write_bytes(b"a\nb\n")
    (tmp_path / "dos.md").write_bytes(b"a\nb\r\nc\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")
    assert extra_checks.crlf_problems(["unix.md", "dos.md", "image.png"], root=str(tmp_path)) == [
        "dos.md:2: carriage return (CRLF or CR line end); save it with LF line ends"]


COPYRIGHT = license_headers.COPYRIGHT
SPDX = license_headers.SPDX


def test_the_colon_form_becomes_the_form_reuse_reads_and_the_gpl_line_gets_its_identifier():
    text = "#!/usr/bin/python\n# Copy" "right: sandboxguard contributors\n# %s\n\nDOC = 1\n" % license_headers.GPL_LINE
    assert license_headers.fixed("plugins/modules/x.py", text) == (
        "#!/usr/bin/python\n# %s\n# %s\n# %sGPL-3.0-or-later\n\nDOC = 1\n"
        % (COPYRIGHT, license_headers.GPL_LINE, SPDX))


def test_a_file_without_a_header_gets_the_license_of_its_place():
    assert license_headers.fixed("tools/x.py", "import os\n") == "# %s\n# %sApache-2.0\nimport os\n" % (COPYRIGHT, SPDX)
    yml = license_headers.fixed("roles/r/tasks/main.yml", "---\n- name: x\n")
    assert yml.startswith("---\n# %s\n" % COPYRIGHT) and "# %sGPL-3.0-or-later\n- name: x" % SPDX in yml
    req = license_headers.fixed("requirements/controller-9.9.txt",
                                "# controller: ansible-core 9.9 on Python 3.99\nx==1\n")
    assert req.startswith("# controller: ansible-core 9.9 on Python 3.99\n# %s\n" % COPYRIGHT)
    assert license_headers.fixed("docs/x.md", "# Title\n").startswith("<!--\n%s\n" % COPYRIGHT)
    assert license_headers.fixed("docs/x.rst", "Title\n").startswith(".. %s\n" % COPYRIGHT)
    assert license_headers.fixed("docs/x.png", "") is None


def test_a_jinja_template_renders_as_before():
    jinja2 = pytest.importorskip("jinja2")  # the pythons layer has only pytest
    text = "#!{{ python }} -I\nprint(1)\n"
    new = license_headers.fixed("roles/r/templates/x.j2", text)
    assert new.startswith("{#- " + COPYRIGHT)
    assert jinja2.Template(new).render(python="/usr/bin/python3") == jinja2.Template(text).render(
        python="/usr/bin/python3")


def test_every_file_that_can_carry_a_header_has_one():
    assert license_headers.main(["--check"]) == 0, "run python3 tools/license_headers.py"

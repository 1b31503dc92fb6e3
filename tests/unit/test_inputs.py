# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""AWX-style inputs, one table: what the as_list / as_bool / as_value filters and modules read."""
import pytest
from sandboxguard import inputs

LISTS = [
    (None, []),
    ("", []),
    ("   ", []),
    ("/a", ["/a"]),
    ("/a,/b", ["/a", "/b"]),
    (" /a , ,/b ,", ["/a", "/b"]),
    (["/a", "/b"], ["/a", "/b"]),
    (["/a,/b", "/c"], ["/a", "/b", "/c"]),
    (["", " ", None], []),
    ([], []),
    (("x",), ["x"]),
    (1000, ["1000"]),
    ([1000, "agent"], ["1000", "agent"]),
]


@pytest.mark.parametrize("value, expected", LISTS)
def test_as_list_reads_lists_comma_strings_and_blanks(value, expected):
    assert inputs.as_list(value) == expected


BOOLS = [
    (True, False, True), (False, True, False),
    ("true", False, True), ("True", False, True), ("yes", False, True), ("on", False, True), ("1", False, True),
    ("false", True, False), ("FALSE", True, False), ("no", True, False), ("off", True, False), ("0", True, False),
    (" false ", True, False),
    ("", True, True), ("", False, False), ("  ", True, True), (None, True, True), (None, False, False),
    (1, False, True), (0, True, False),
]


@pytest.mark.parametrize("value, default, expected", BOOLS)
def test_as_bool_reads_booleans_survey_strings_and_blank_as_default(value, default, expected):
    assert inputs.as_bool(value, default) is expected


@pytest.mark.parametrize("value", ["maybe", "2", "truthy", 7, ["true"]])
def test_as_bool_refuses_what_is_not_a_boolean_naming_it(value):
    with pytest.raises(inputs.InputError, match=r"fail_on_findings: .* is not a boolean"):
        inputs.as_bool(value, True, "fail_on_findings")


VALUES = [
    ("", 10, 10), ("  ", 10, 10), (None, 10, 10),
    (0, 10, 0), ("0", 10, "0"), (5.5, 10, 5.5), ("hermes", None, "hermes"), (" hermes ", None, "hermes"),
    ([], "x", []),
]


@pytest.mark.parametrize("value, default, expected", VALUES)
def test_as_value_makes_blank_unset_but_keeps_zero(value, default, expected):
    assert inputs.as_value(value, default) == expected


MODES = [(0o644, 0o644), ("0644", 0o644), ("644", 0o644), (" 0600 ", 0o600), ("0", 0), (0o777, 0o777)]


@pytest.mark.parametrize("value, expected", MODES)
def test_as_mode_reads_ints_and_octal_strings(value, expected):
    assert inputs.as_mode(value) == expected


@pytest.mark.parametrize("value", ["0888", "rw-r--r--", "", "01000", 0o4755, -1, True, None])
def test_as_mode_refuses_what_is_not_permission_bits_naming_the_option(value):
    with pytest.raises(inputs.InputError, match=r"^dir_mode .*: give octal permission bits"):
        inputs.as_mode(value, "dir_mode")

# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""AWX-style inputs, one table: what the as_list / as_bool / as_value filters and modules read."""
import pytest
from sandboxguard._core import inputs

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


# One boolean parser: the words are Ansible's own (a value means the same in a role
# variable, a module option of type bool and a setting the library reads), and no other
# library file keeps a list of its own.
def test_the_boolean_words_are_the_ones_ansibles_bool_type_takes():
    convert_bool = pytest.importorskip("ansible.module_utils.parsing.convert_bool")
    assert set(inputs.TRUE_WORDS) == {w for w in convert_bool.BOOLEANS_TRUE if isinstance(w, str)}
    assert set(inputs.FALSE_WORDS) == {w for w in convert_bool.BOOLEANS_FALSE if isinstance(w, str)}


@pytest.mark.parametrize("value", [*inputs.TRUE_WORDS, *inputs.FALSE_WORDS, "maybe", "2", "", None, 2, 1, 0, True])
def test_bwrap_readonly_reads_booleans_by_the_same_rule(tmp_path, value):
    from sandboxguard.bwrap_settings import validate_plugin_settings

    result = validate_plugin_settings({"binds": [{"src": str(tmp_path), "readonly": value}]})
    expected = inputs.bool_word(value)
    if expected is None:
        assert [e for e in result["errors"] if "readonly must be true or false" in e], value
    else:
        assert result["errors"] == [] and result["settings"]["binds"][0]["readonly"] is expected


def test_blank_without_a_default_is_none_and_the_message_names_no_default():
    assert inputs.as_bool("", None) is None
    with pytest.raises(inputs.InputError) as caught:
        inputs.as_bool("maybe", None, "profiles")
    assert str(caught.value) == ("profiles: 'maybe' is not a boolean: use true or false "
                                 "(or leave it blank for the default)")


def test_no_other_library_file_keeps_a_list_of_boolean_words():
    import ast
    import os

    src = os.path.dirname(inputs.__file__)
    found = []
    for name in sorted(os.listdir(src)):
        if not name.endswith(".py") or name == "inputs.py":
            continue
        with open(os.path.join(src, name), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                words = {e.value.lower() for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if {"true", "yes", "1"} <= words or {"false", "no", "0"} <= words:
                    found.append("%s:%d" % (name, node.lineno))
    assert found == [], "parse booleans with inputs.bool_word / as_bool: %s" % found


def test_the_as_bool_filter_leaves_a_blank_value_to_the_modules_default():
    pytest.importorskip("ansible")
    import sys

    top = __file__.rsplit("/tests/", 1)[0]
    sys.path.insert(0, top + "/.cache/collections")
    try:
        from ansible_collections.sandboxguard.boundary.plugins.filter import inputs as filters
    finally:
        sys.path.pop(0)
    omit = "__omit_place_holder__0123"
    assert filters.as_bool("", omit, "x") is omit
    assert filters.as_bool("off", omit, "x") is False
    assert filters.as_bool("", "true", "x") is True
    with pytest.raises(Exception, match=r"x: 'maybe' is not a boolean: .*for the default\)"):
        filters.as_bool("maybe", omit, "x")

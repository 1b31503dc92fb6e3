# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""fetch: the pure parts. Denylist (pass 1 and pass 2), names, marker output, decoding."""
import base64

import pytest
from sandboxguard import credentials
from sandboxguard import fetch as F
from sandboxguard._fetch.output import decode_payload, parse_output
from sandboxguard._fetch.policy import SYSTEM_PREFIXES, check_home, output_limit, safe_name
from sandboxguard._fetch.program import read_program, shell_join

HOME = "/home/agent"


def code(path, home=None):
    problem = F.check_path(path, home)
    return problem[0] if problem else None


# ---------------------------------------------------------------- system prefixes

@pytest.mark.parametrize("prefix", SYSTEM_PREFIXES)
@pytest.mark.parametrize("home", [None, HOME])
def test_system_prefix_itself_and_below_is_denylisted(prefix, home):
    assert code(prefix, home) == "denylisted"
    assert code(prefix + "/some/file", home) == "denylisted"


@pytest.mark.parametrize("prefix", SYSTEM_PREFIXES)
def test_name_that_only_starts_like_a_system_prefix_is_allowed(prefix):
    assert code(prefix + "x/report.pdf") is None


def test_var_run_alias_run_is_denylisted_because_pass_2_sees_the_resolved_name():
    assert code("/run/secrets/kubernetes.io/serviceaccount/token", HOME) == "denylisted"


def test_root_home_exempts_itself_from_the_root_prefix_when_known():
    assert code("/root/out/report.pdf", "/root") is None


def test_root_is_denylisted_when_the_home_is_unknown():
    assert code("/root/out/report.pdf") == "denylisted"


def test_root_is_denylisted_when_the_home_is_elsewhere():
    assert code("/root/out/report.pdf", HOME) == "denylisted"


def test_service_home_below_var_lib_exempts_only_itself():
    assert code("/var/lib/jenkins/out/report.pdf", "/var/lib/jenkins") is None
    assert code("/var/lib/dpkg/status", "/var/lib/jenkins") == "denylisted"


def test_credentials_stay_denylisted_inside_an_exempted_root_home():
    assert code("/root/.ssh/id_rsa", "/root") == "denylisted"


@pytest.mark.parametrize("home", ["/", "/etc", "/etc/agent", "/proc/1", "/var/lib", "/dev/shm", "/var/log/x"])
def test_home_under_a_system_prefix_is_bad_input(home):
    with pytest.raises(F.FetchError, match="home"):
        F.check_path("/tmp/x", home)


@pytest.mark.parametrize("home", ["home/agent", "/home/agent/", "/home//agent", "/home/./agent", "/home/x/../agent"])
def test_home_must_be_absolute_and_normalised(home):
    with pytest.raises(F.FetchError, match="home"):
        check_home(home)


# ---------------------------------------------------------------- credential names

# The one list (credentials.py): every entry fetch applies, in both tables, is refused.
FETCH_HOME_STORES = credentials.home_stores("fetch")
HERMES_STORES = credentials.hermes_stores()
# Single-component stores, for the tests that place a name at a depth.
SINGLE_NAMES = tuple(s for s in FETCH_HOME_STORES if "/" not in s)


@pytest.mark.parametrize("store", FETCH_HOME_STORES)
def test_every_home_store_and_its_contents_under_a_known_home_is_denylisted(store):
    assert code("%s/%s" % (HOME, store), HOME) == "denylisted"
    assert code("%s/%s/some/file" % (HOME, store), HOME) == "denylisted"


@pytest.mark.parametrize("store", FETCH_HOME_STORES)
def test_every_home_store_deeper_under_a_known_home_is_denylisted(store):
    assert code("%s/project/%s/x" % (HOME, store), HOME) == "denylisted"


@pytest.mark.parametrize("store", FETCH_HOME_STORES)
def test_every_home_store_outside_a_known_home_is_allowed(store):
    assert code("/srv/work/%s/x" % store, HOME) is None


@pytest.mark.parametrize("store", FETCH_HOME_STORES)
def test_every_home_store_at_any_depth_is_denylisted_when_home_unknown(store):
    assert code("/%s" % store) == "denylisted"
    assert code("/srv/work/%s" % store) == "denylisted"
    assert code("/a/b/c/%s/d" % store) == "denylisted"


@pytest.mark.parametrize("name", SINGLE_NAMES)
def test_credential_lookalike_names_are_allowed(name):
    assert code("%s/%sx" % (HOME, name), HOME) is None
    assert code("/srv/x%s" % name) is None


def test_a_partial_multi_component_store_is_not_a_store():
    # .cargo is a toolchain directory; only its token files are stores.
    assert code(HOME + "/.cargo/bin/cargo", HOME) is None
    assert code(HOME + "/.cargo/credentials.toml", HOME) == "denylisted"
    assert code("/srv/Library/Caches/x") is None


@pytest.mark.parametrize("store", HERMES_STORES)
@pytest.mark.parametrize("home", [None, HOME])
def test_every_hermes_store_under_dot_hermes_is_denylisted(store, home):
    assert code("%s/.hermes/%s" % (HOME, store), home) == "denylisted"
    assert code("%s/.hermes/%s/inner" % (HOME, store), home) == "denylisted"
    assert code("%s/.hermes/profiles/eval/%s" % (HOME, store), home) == "denylisted"


@pytest.mark.parametrize("store", HERMES_STORES)
def test_every_hermes_store_under_the_known_hermes_home_is_denylisted(store):
    hermes_home = "/opt/data"
    assert F.check_path("/opt/data/%s" % store, HOME, [hermes_home])[0] == "denylisted"
    assert F.check_path("/opt/data/profiles/eval/%s" % store, HOME, [hermes_home])[0] == "denylisted"
    # Without the Hermes home the same path is an ordinary file outside the home.
    assert code("/opt/data/%s" % store, HOME) is None


@pytest.mark.parametrize("path", [
    "/.hermes/mcp-tokens/github.json", "/.hermes/credentials/x", "/.hermes/auth/google_oauth.json",
    "/.hermes/cache/bws_cache.json", "/.hermes/state.db", "/.hermes/state.db-wal", "/.hermes/state.db-shm",
    "/.hermes/state.db-journal", "/.hermes/sessions/s1.jsonl", "/.hermes/pairing/codes",
    "/.hermes/browser-profile/Default/Cookies", "/.hermes/kanban.db", "/.hermes/auth.lock",
    "/.hermes/config.yaml", "/Library/Keychains/login.keychain-db", "/.password-store/x.gpg",
    "/.local/share/keyrings/login.keyring", "/.cargo/credentials.toml",
])
@pytest.mark.parametrize("home", [None, HOME])
def test_the_stores_the_issue_names_are_denylisted(path, home):
    assert code(HOME + path, home) == "denylisted"


@pytest.mark.parametrize("name", ["auth.json", ".env"])
@pytest.mark.parametrize("home", [None, HOME])
def test_hermes_token_names_are_denylisted_at_any_depth_below_dot_hermes(name, home):
    assert code("%s/.hermes/skills/tool/%s" % (HOME, name), home) == "denylisted"


@pytest.mark.parametrize("path", [
    HOME + "/.hermes/cache/documents/chart.png", HOME + "/.hermes/skills/x/SKILL.md",
    HOME + "/.hermes/logs/agent.log", HOME + "/.hermes/state.dbx", HOME + "/.hermes/profiles/eval/notes.md",
    HOME + "/project/sessions/x.txt", HOME + "/project/config.yaml",
])
def test_other_hermes_files_are_allowed(path):
    assert code(path, HOME) is None


def test_hermes_home_must_be_absolute_and_normalised():
    for bad in ("data", "/opt/data/", "/opt//data", "/"):
        with pytest.raises(F.FetchError, match="Hermes home"):
            F.check_path("/tmp/x", HOME, [bad])


def test_the_reason_names_the_matched_rule():
    assert ".ssh" in F.check_path(HOME + "/.ssh/id_rsa", HOME)[1]
    assert "/etc" in F.check_path("/etc/shadow")[1]


# ---------------------------------------------------------------- shape of the path

@pytest.mark.parametrize("path", ["report.pdf", "out/report.pdf", "./report.pdf", "~report.pdf", "~agent/x", ""])
def test_relative_path_is_refused(path):
    assert code(path, HOME) == "not_absolute"


@pytest.mark.parametrize("path", ["~/report.pdf", "~", "~/out/report.pdf"])
def test_tilde_path_is_refused_when_the_home_is_unknown(path):
    problem = F.check_path(path)
    assert problem[0] == "not_absolute"
    assert "home" in problem[1] and "not known" in problem[1]


def test_tilde_path_is_read_against_a_known_home():
    assert F.expand_home("~/out/report.pdf", HOME) == HOME + "/out/report.pdf"
    assert F.expand_home("~", HOME) == HOME
    assert F.expand_home("~/out/report.pdf", None) == "~/out/report.pdf"
    assert code("~/out/report.pdf", HOME) is None


@pytest.mark.parametrize("path", ["~/.ssh/id_rsa", "~/.hermes/auth.json", "~/../../etc/shadow", "~/a/../b"])
def test_tilde_path_against_a_known_home_passes_the_same_checks(path):
    assert code(path, HOME) in ("denylisted", "not_normalised")


@pytest.mark.parametrize("path", [
    HOME + "/out/../.ssh/id_rsa",      # .. climbing into a credential dir
    HOME + "/out/../report.pdf",       # .. even when the target would be allowed
    "/tmp/../etc/shadow",
    "//etc/shadow",                    # POSIX leaves a leading // implementation-defined
    HOME + "//.ssh/id_rsa",
    HOME + "/./report.pdf",
    HOME + "/out/",                    # trailing slash
    HOME + "/out/.",
])
@pytest.mark.parametrize("home", [None, HOME])
def test_unnormalised_path_is_refused_whatever_it_names(path, home):
    assert code(path, home) == "not_normalised"


def test_unnormalised_refusal_suggests_the_normal_form():
    assert "/home/agent/.ssh/id_rsa" in F.check_path(HOME + "/out/../.ssh/id_rsa")[1]


@pytest.mark.parametrize("path", [HOME + "/a\nb", HOME + "/a\x00b", HOME + "/a\x1bb", HOME + "/a\x7f"])
def test_control_characters_are_refused(path):
    assert code(path, HOME) == "control_character"


def test_name_that_is_not_utf8_is_refused():
    assert code(HOME + "/r\udcffport", HOME) == "not_utf8"


def test_ordinary_artifact_is_allowed_with_and_without_home():
    assert code(HOME + "/out/chart.png", HOME) is None
    assert code(HOME + "/out/chart.png") is None


# ---------------------------------------------------------------- names on arrival

@pytest.mark.parametrize(("given", "expected"), [
    ("/home/agent/out/report.pdf", "report.pdf"),
    ("informe_año.pdf", "informe_año.pdf"),
    (".bashrc", "_bashrc"),
    ("..", "fetched"),
    ("", "fetched"),
    ("a\nb\x00c", "a_b_c"),
    ("a\u202eb", "a_b"),             # right-to-left override is a format character
])
def test_safe_name(given, expected):
    assert safe_name(given) == expected


def test_safe_name_keeps_the_extension_within_200_bytes():
    name = safe_name("x" * 300 + ".tar.gz")
    assert name.endswith(".gz")
    assert len(name.encode()) <= 200


# ---------------------------------------------------------------- marker output

MARK = "0123456789abcdef01234567"


def tagged(*lines):
    return b"".join(b"%s:%s\n" % (MARK.encode(), line) for line in lines)


def payload_lines(data):
    encoded = base64.encodebytes(data).splitlines()
    return [b"D:" + line for line in encoded]


def test_noise_around_and_between_tagged_lines_is_ignored_and_counted():
    out = (b"Welcome to Debian\r\nLast login: yesterday\n"
           + tagged(b"STAT 81a4 1 5", b"BEGIN")
           + b"bashrc says hi\nQUJD\n"       # noise that happens to be valid base64
           + tagged(*payload_lines(b"hello"), b"END", b"DONE") + b"logout\n")
    parsed = parse_output(out, MARK)
    assert decode_payload(parsed["data"]) == b"hello"
    assert (parsed["mode"], parsed["nlink"], parsed["size"]) == (0o100644, 1, 5)
    assert parsed["noise"] == 5


def test_lines_tagged_with_another_token_are_noise():
    out = tagged(b"BEGIN") + b"ffffffffffffffffffffffff:D:QUJD\n" + tagged(b"END", b"DONE")
    parsed = parse_output(out, MARK)
    assert parsed["data"] == []
    assert parsed["noise"] == 1


def test_crlf_line_endings_from_a_pty_are_accepted():
    out = tagged(b"BEGIN").replace(b"\n", b"\r\n") + tagged(*payload_lines(b"x"), b"END").replace(b"\n", b"\r\n")
    assert decode_payload(parse_output(out, MARK)["data"]) == b"x"


def test_payload_line_before_begin_is_a_protocol_error():
    with pytest.raises(ValueError, match="outside"):
        parse_output(tagged(b"D:QUJD", b"BEGIN", b"END"), MARK)


def test_unknown_tagged_line_is_a_protocol_error():
    with pytest.raises(ValueError, match="unknown"):
        parse_output(tagged(b"SURPRISE"), MARK)


def test_refusal_line_gives_code_and_reason():
    parsed = parse_output(tagged(b"REFUSE hard_link the file has 2 hard links"), MARK)
    assert (parsed["refuse_code"], parsed["refuse_reason"]) == ("hard_link", "the file has 2 hard links")


def test_resolved_path_travels_as_hex_so_any_byte_survives():
    parsed = parse_output(tagged(b"RESOLVED 2f610a62", b"DONE"), MARK)
    assert parsed["resolved"] == b"/a\nb"


def test_malformed_stat_line_is_a_protocol_error():
    with pytest.raises(ValueError, match="STAT"):
        parse_output(tagged(b"STAT 81a4 one 5"), MARK)


@pytest.mark.parametrize("lines", [
    [b"QUJD!"],                 # not in the alphabet
    [b"QUI=", b"QUJD"],         # padding before the last line
    [b"QUJ"],                   # length not a multiple of 4
    [b"QU=D"],                  # padding in the middle
    [b" QUJD"],                 # whitespace
])
def test_decoding_is_strict(lines):
    with pytest.raises(ValueError):
        decode_payload(lines)


def test_empty_payload_decodes_to_empty_file():
    assert decode_payload([]) == b""


def test_output_limit_covers_an_encoded_file_of_max_bytes_plus_one():
    data = b"\xff" * 1001
    encoded = sum(len(line) + len(MARK) + 4 for line in base64.encodebytes(data).splitlines())
    assert output_limit(1000) > encoded
    assert output_limit(1000) < 100 * 1024


def test_programs_refuse_a_token_that_is_not_hex():
    with pytest.raises(ValueError):
        read_program("/x", "not-a-token")


def test_shell_join_quotes_the_program_as_one_word():
    assert shell_join(["/bin/sh", "-c", "echo 'a b'"]) == "/bin/sh -c 'echo '\"'\"'a b'\"'\"''"


# ---------------------------------------------------------------- refusals before any byte moves

class RecordingChannel:
    """An exec channel that records calls and never runs anything."""

    def __init__(self):
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv)
        return 1, b"", b"not expected to be called"


def test_strict_mode_never_uses_the_channel(tmp_path):
    channel = RecordingChannel()
    report = F.fetch(channel, HOME + "/out/report.pdf", str(tmp_path), strict=True)
    assert report["refused_code"] == "strict"
    assert report["stage"] == "strict"
    assert channel.calls == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", [HOME + "/.ssh/id_rsa", "/etc/shadow", "relative", HOME + "/a/../b"])
def test_pass_1_refusal_never_uses_the_channel(tmp_path, path):
    channel = RecordingChannel()
    report = F.fetch(channel, path, str(tmp_path), remote_home=HOME)
    assert report["stage"] == "pass1"
    assert report["bytes_received"] == 0
    assert channel.calls == []


def test_missing_destination_directory_is_bad_input(tmp_path):
    with pytest.raises(F.FetchError, match="create it first"):
        F.fetch(RecordingChannel(), HOME + "/x", str(tmp_path / "missing"))


def test_negative_max_bytes_is_bad_input(tmp_path):
    with pytest.raises(F.FetchError, match="max_bytes"):
        F.fetch(RecordingChannel(), HOME + "/x", str(tmp_path), max_bytes=-1)


class DeadChannel:
    """A sandbox without /bin/sh: every command fails with 127 and says why on stderr."""

    def __call__(self, argv):
        return 127, b"Welcome!\n", b"exec: /bin/sh: not found\n"


def test_sandbox_without_a_shell_fails_closed_and_says_why(tmp_path):
    report = F.fetch(DeadChannel(), HOME + "/out/r.txt", str(tmp_path), remote_home=HOME)
    assert (report["stage"], report["refused_code"]) == ("resolve", "protocol")
    assert "/bin/sh: not found" in report["refused"]
    assert list(tmp_path.iterdir()) == []


def test_resolved_home_travels_as_hex_too():
    parsed = parse_output(tagged(b"RESOLVED 2f61", b"HOME 2f68", b"DONE"), MARK)
    assert (parsed["resolved"], parsed["resolved_home"]) == (b"/a", b"/h")

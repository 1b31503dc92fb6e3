# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""credentials: the one list of credential stores is a superset of every list it replaces.

The reference lists below are copies of Hermes Agent's own tables (NousResearch/hermes-agent)
and of sandboxguard's two lists before credentials.py, taken on 2026-12-01. A test fails when
an entry of any of them is missing from the one list, so a future edit cannot drop one
silently; the consumers' own tests (test_fetch, test_bwrap, test_bwrap_settings) prove that
every entry of the one list is refused or hidden.
"""
import pytest
from sandboxguard import credentials

# tools/environments/bubblewrap_home.py: DENIED_HOME_PATHS (49 entries)
HERMES_DENIED_HOME_PATHS = (
    ".ssh", ".gnupg", ".gpg", ".aws", ".azure", ".boto", ".s3cmd", ".kube", ".docker", ".netrc", ".npmrc",
    ".pypirc", ".pgpass", ".env", ".git-credentials", ".git-credential-cache", ".password-store", ".pki",
    ".vaults", ".cert", ".terraform.d", ".config/gcloud", ".config/gh", ".config/hub", ".config/glab-cli",
    ".config/op", ".config/rclone", ".config/keybase", ".config/msmtp", ".config/1Password", ".config/Bitwarden",
    ".config/keepassxc", ".config/filezilla", ".config/remmina", ".config/git/credentials",
    ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
    ".config/vivaldi", ".local/share/keyrings", ".local/share/kwalletd", ".local/share/plasma-vault",
    ".local/share/pki", ".cargo/credentials", ".cargo/credentials.toml", ".m2/settings.xml",
    ".gradle/gradle.properties", ".cache/huggingface/token",
)
# gateway/platforms/base.py: _MEDIA_DELIVERY_DENIED_HOME_SUBPATHS (the media-fetch denylist)
HERMES_MEDIA_HOME_SUBPATHS = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config", ".azure", ".gcloud",
                              "Library/Keychains")
# agent/file_safety.py: HOME_CREDENTIAL_DIRS, and the home files of build_write_denied_paths
HERMES_HOME_CREDENTIAL_DIRS = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".config/gh",
                               ".config/gcloud")
HERMES_WRITE_DENIED_HOME_FILES = (".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials")
# gateway/platforms/base.py: _ROOT_CREDENTIAL_PATHS (24 entries, relative to HERMES_HOME)
HERMES_ROOT_CREDENTIAL_PATHS = (
    ".env", "auth.json", "auth.lock", "credentials", "config.yaml", ".anthropic_oauth.json", "google_token.json",
    "google_oauth_pending.json", "auth/google_oauth.json", "webhook_subscriptions.json", "cache/bws_cache.json",
    "cache/bws_cache.enc.json", "pairing", "mcp-tokens", "sessions", "browser-profile",
    "state.db", "state.db-wal", "state.db-shm", "state.db-journal",
    "kanban.db", "kanban.db-wal", "kanban.db-shm", "kanban.db-journal",
)
# sandboxguard before credentials.py: bwrap.CREDENTIAL_STORES and fetch's CREDENTIAL_DIRS/FILES
OLD_BWRAP_STORES = (
    ".ssh", ".aws", ".gnupg", ".kube", ".docker", ".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials",
    ".config/gh", ".config/gcloud", ".azure", ".mozilla", ".config/google-chrome", ".config/chromium",
    ".config/BraveSoftware", ".local/share/keyrings", ".password-store", ".hermes", ".cargo/credentials.toml",
    ".cargo/credentials", ".gem/credentials", ".m2/settings.xml", ".config/npm/npmrc",
)
OLD_FETCH_STORES = (".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config", ".azure", ".gcloud", ".netrc",
                    ".pgpass", ".npmrc", ".pypirc", ".git-credentials")


def test_the_reference_copies_have_the_sizes_hermes_has():
    assert len(HERMES_DENIED_HOME_PATHS) == len(set(HERMES_DENIED_HOME_PATHS)) == 49
    assert len(HERMES_ROOT_CREDENTIAL_PATHS) == len(set(HERMES_ROOT_CREDENTIAL_PATHS)) == 24


@pytest.mark.parametrize("reference", [HERMES_DENIED_HOME_PATHS, HERMES_HOME_CREDENTIAL_DIRS,
                                       HERMES_WRITE_DENIED_HOME_FILES, OLD_BWRAP_STORES])
def test_the_bwrap_hidden_set_holds_every_home_list_it_replaces(reference):
    assert set(reference) - set(credentials.home_stores("bwrap")) == set()


@pytest.mark.parametrize("reference", [HERMES_DENIED_HOME_PATHS, HERMES_MEDIA_HOME_SUBPATHS,
                                       HERMES_HOME_CREDENTIAL_DIRS, HERMES_WRITE_DENIED_HOME_FILES,
                                       OLD_FETCH_STORES])
def test_the_fetch_denylist_holds_every_home_list_it_replaces(reference):
    assert set(reference) - set(credentials.home_stores("fetch")) == set()


def test_the_hermes_home_stores_hold_root_credential_paths():
    assert set(HERMES_ROOT_CREDENTIAL_PATHS) - set(credentials.hermes_stores()) == set()


def test_every_entry_names_known_sources_and_appears_once():
    for table in (credentials.HOME_STORES, credentials.HERMES_STORES):
        paths = [s.path for s in table]
        assert len(paths) == len(set(paths))
        for store in table:
            assert store.sources and set(store.sources) <= set(credentials.SOURCES), store
            assert store.scope in ("all", "fetch", "bwrap") and store.what, store


def test_only_config_and_the_hermes_home_are_scoped_to_one_consumer():
    # .config: refused whole by fetch, default-deny (children judged one by one) for bwrap.
    # .hermes: hidden whole by bwrap, its stores refused one by one by fetch.
    assert {s.path: s.scope for s in credentials.HOME_STORES if s.scope != "all"} == {
        ".config": "fetch", ".hermes": "bwrap"}


@pytest.mark.parametrize(("rel", "expected"), [
    (".ssh", True), (".ssh/id_rsa", True), (".sshx", False), (".config/gh/hosts.yml", True),
    (".config/nvim", False), (".cargo", False), (".cargo/credentials.toml", True), (".hermes/x", True),
])
def test_is_home_store(rel, expected):
    assert credentials.is_home_store(rel, "bwrap") is expected


def test_store_under_names_a_store_inside_a_directory():
    assert credentials.store_under(".cargo", "bwrap") == ".cargo/credentials"
    assert credentials.store_under(".config/nvim", "bwrap") is None
    assert credentials.store_under("", "bwrap") == ".ssh"


def test_hermes_stores_match_at_the_top_or_per_profile_only():
    match = credentials.match_hermes_relative
    assert match(("state.db-wal",)) == "state.db-wal"
    assert match(("profiles", "eval", "mcp-tokens", "gh.json")) == "mcp-tokens"
    assert match(("skills", "sessions", "notes.md")) is None
    assert match(("skills", "x", ".env")) == ".env"
    assert match(("profiles",)) is None


def test_a_consumer_must_be_named():
    with pytest.raises(ValueError, match="consumer"):
        credentials.home_stores("leaks")

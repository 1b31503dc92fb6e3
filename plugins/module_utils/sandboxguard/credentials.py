# GENERATED from python/src/sandboxguard/credentials.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The one list of credential stores, and the rules that match a path against it.

Three consumers read this list and nothing else: ``fetch.check_path`` (a fetch never
returns a store), the bubblewrap probe (``bwrap.hidden_paths``: every store that exists is
checked to be hidden inside the sandbox) and the bubblewrap settings validator
(``bwrap_settings``: a ``home_allow`` entry or a bind source that names a store is dropped
with a warning).

Two tables:

``HOME_STORES``
    paths relative to a user's home directory. Every entry is refused by fetch and hidden
    by bubblewrap, except where ``scope`` says otherwise: ``.config`` is refused whole by
    fetch (Hermes' media-fetch denylist does the same) while for bubblewrap it is a
    default-deny directory whose children are judged one by one; ``.hermes`` is hidden
    whole by bubblewrap (seed 004: the Hermes home is hidden) while fetch refuses only the
    stores inside it (``HERMES_STORES``), so reports and charts under ``~/.hermes`` can
    still be fetched, as in Hermes.

``HERMES_STORES``
    paths relative to a Hermes home: ``~/.hermes``, the known ``HERMES_HOME`` (which may
    lie anywhere) and each profile under either (``profiles/<name>/``).

Each entry carries the sources that list it (``SOURCES`` says what each key is), so a
reader can check the list against them and a test can prove the superset:

* ``bwrap-home``: Hermes ``DENIED_HOME_PATHS`` in ``tools/environments/bubblewrap_home.py``
  (49 entries);
* ``media-home``: Hermes ``_MEDIA_DELIVERY_DENIED_HOME_SUBPATHS`` in
  ``gateway/platforms/base.py`` (the media-fetch denylist, 9 entries);
* ``write-guard``: Hermes ``HOME_CREDENTIAL_DIRS`` and the home files of
  ``build_write_denied_paths`` in ``agent/file_safety.py``;
* ``root-creds``: Hermes ``_ROOT_CREDENTIAL_PATHS`` in ``gateway/platforms/base.py``
  (24 entries, relative to HERMES_HOME);
* ``file-safety``: Hermes' read and write guards in ``agent/file_safety.py`` for paths under
  HERMES_HOME (``_HERMES_PROTECTED_SUBPATHS``, ``_READ_DENIED_DIRS``);
* ``seed-004``: the bubblewrap backend's README (browser profiles, desktop keyrings, the
  token files below allowed toolchain directories);
* ``sandboxguard``: our own lists before this one (``bwrap.py`` and ``fetch.py``).

Pure: nothing here touches the file system.
"""
import posixpath
from collections import namedtuple

__all__ = [
    "HERMES_STORES",
    "HOME_STORES",
    "SOURCES",
    "hermes_stores",
    "home_stores",
    "is_home_store",
    "match_components",
    "match_hermes_relative",
]

SOURCES = {
    "bwrap-home": "Hermes DENIED_HOME_PATHS (tools/environments/bubblewrap_home.py)",
    "media-home": "Hermes _MEDIA_DELIVERY_DENIED_HOME_SUBPATHS (gateway/platforms/base.py)",
    "write-guard": "Hermes HOME_CREDENTIAL_DIRS and build_write_denied_paths (agent/file_safety.py)",
    "root-creds": "Hermes _ROOT_CREDENTIAL_PATHS (gateway/platforms/base.py)",
    "file-safety": "Hermes read/write guards for HERMES_HOME (agent/file_safety.py)",
    "seed-004": "the Hermes bubblewrap backend README (seed 004)",
    "sandboxguard": "sandboxguard's own lists before this module (bwrap.py, fetch.py)",
}

# scope: which consumers apply the entry; "all", "fetch" or "bwrap".
Store = namedtuple("Store", ("path", "sources", "scope", "what"))


def _store(path, sources, what, scope="all"):
    return Store(path, tuple(sources.split()), scope, what)


HOME_STORES = (
    # --- keys and cloud logins
    _store(".ssh", "bwrap-home media-home write-guard seed-004 sandboxguard", "SSH keys"),
    _store(".gnupg", "bwrap-home media-home write-guard seed-004 sandboxguard", "GnuPG keyring"),
    _store(".gpg", "bwrap-home", "GnuPG keyring (old name)"),
    _store(".aws", "bwrap-home media-home write-guard seed-004 sandboxguard", "AWS credentials"),
    _store(".azure", "bwrap-home media-home write-guard sandboxguard", "Azure CLI tokens"),
    _store(".gcloud", "media-home sandboxguard", "Google Cloud SDK (old location)"),
    _store(".config/gcloud", "bwrap-home write-guard seed-004 sandboxguard", "Google Cloud SDK"),
    _store(".boto", "bwrap-home", "boto / gsutil credentials"),
    _store(".s3cmd", "bwrap-home", "s3cmd credentials"),
    _store(".kube", "bwrap-home media-home write-guard seed-004 sandboxguard", "Kubernetes configs and tokens"),
    _store(".docker", "bwrap-home media-home write-guard seed-004 sandboxguard", "registry logins"),
    _store(".terraform.d", "bwrap-home", "Terraform Cloud token"),
    _store(".pki", "bwrap-home", "NSS certificate database (Chromium)"),
    _store(".cert", "bwrap-home", "client certificates"),
    _store(".vaults", "bwrap-home", "password vaults"),
    _store(".password-store", "bwrap-home seed-004 sandboxguard", "pass(1) password store"),
    _store(".env", "bwrap-home", "environment file with secrets"),
    # --- package registries and git
    _store(".netrc", "bwrap-home write-guard seed-004 sandboxguard", "netrc logins"),
    _store(".npmrc", "bwrap-home write-guard seed-004 sandboxguard", "npm token"),
    _store(".pypirc", "bwrap-home write-guard seed-004 sandboxguard", "PyPI token"),
    _store(".pgpass", "bwrap-home write-guard seed-004 sandboxguard", "PostgreSQL passwords"),
    _store(".git-credentials", "bwrap-home write-guard seed-004 sandboxguard", "git credential store"),
    _store(".git-credential-cache", "bwrap-home", "git credential cache socket"),
    _store(".config/git/credentials", "bwrap-home", "git credential store (XDG)"),
    _store(".config/npm/npmrc", "seed-004 sandboxguard", "npm token (XDG)"),
    _store(".cargo/credentials", "bwrap-home seed-004 sandboxguard", "crates.io token (old name)"),
    _store(".cargo/credentials.toml", "bwrap-home seed-004 sandboxguard", "crates.io token"),
    _store(".gem/credentials", "seed-004 sandboxguard", "RubyGems API key"),
    _store(".m2/settings.xml", "bwrap-home seed-004 sandboxguard", "Maven server passwords"),
    _store(".gradle/gradle.properties", "bwrap-home", "Gradle publishing credentials"),
    _store(".cache/huggingface/token", "bwrap-home", "Hugging Face token"),
    # --- tools under .config
    _store(".config/gh", "bwrap-home write-guard seed-004 sandboxguard", "GitHub CLI token"),
    _store(".config/hub", "bwrap-home", "hub GitHub token"),
    _store(".config/glab-cli", "bwrap-home", "GitLab CLI token"),
    _store(".config/op", "bwrap-home", "1Password CLI"),
    _store(".config/1Password", "bwrap-home", "1Password"),
    _store(".config/Bitwarden", "bwrap-home", "Bitwarden"),
    _store(".config/keepassxc", "bwrap-home", "KeePassXC"),
    _store(".config/rclone", "bwrap-home", "rclone remotes and tokens"),
    _store(".config/keybase", "bwrap-home", "Keybase"),
    _store(".config/msmtp", "bwrap-home", "msmtp mail password"),
    _store(".config/filezilla", "bwrap-home", "FileZilla saved logins"),
    _store(".config/remmina", "bwrap-home", "Remmina saved logins"),
    # --- browser profiles (cookies, saved logins)
    _store(".mozilla", "seed-004 sandboxguard", "Firefox profiles"),
    _store(".config/google-chrome", "bwrap-home seed-004 sandboxguard", "Chrome profile"),
    _store(".config/chromium", "bwrap-home seed-004 sandboxguard", "Chromium profile"),
    _store(".config/BraveSoftware", "bwrap-home seed-004 sandboxguard", "Brave profile"),
    _store(".config/microsoft-edge", "bwrap-home", "Edge profile"),
    _store(".config/vivaldi", "bwrap-home", "Vivaldi profile"),
    # --- desktop keyrings
    _store(".local/share/keyrings", "bwrap-home seed-004 sandboxguard", "GNOME keyring"),
    _store(".local/share/kwalletd", "bwrap-home", "KWallet"),
    _store(".local/share/plasma-vault", "bwrap-home", "Plasma Vault"),
    _store(".local/share/pki", "bwrap-home", "NSS certificate database"),
    _store("Library/Keychains", "media-home", "macOS keychains"),
    # --- scoped to one consumer
    _store(".config", "media-home sandboxguard",
           "every application's settings: fetch refuses it whole; bubblewrap hides it by default-deny "
           "and judges each child", scope="fetch"),
    _store(".hermes", "seed-004 sandboxguard",
           "the Hermes home: bubblewrap hides it whole; fetch refuses the stores in HERMES_STORES", scope="bwrap"),
)


def _sqlite(name, sources, what):
    """A SQLite store and its WAL, shared-memory and rollback-journal sidecars."""
    return tuple(_store(name + suffix, sources, what) for suffix in ("", "-wal", "-shm", "-journal"))


HERMES_STORES = (
    _store(".env", "root-creds file-safety sandboxguard", "provider API keys"),
    _store("auth.json", "root-creds file-safety sandboxguard", "OAuth tokens"),
    _store("auth.lock", "root-creds file-safety", "lock of the OAuth token store"),
    _store("credentials", "root-creds", "credential directory"),
    _store("config.yaml", "root-creds", "configuration (may hold keys)"),
    _store(".anthropic_oauth.json", "root-creds file-safety", "Anthropic PKCE tokens"),
    _store("google_token.json", "root-creds", "Google token"),
    _store("google_oauth_pending.json", "root-creds", "pending Google OAuth exchange"),
    _store("auth/google_oauth.json", "root-creds file-safety", "Google OAuth tokens"),
    _store("webhook_subscriptions.json", "root-creds file-safety", "webhook HMAC secrets"),
    _store("cache/bws_cache.json", "root-creds file-safety", "Bitwarden Secrets Manager cache"),
    _store("cache/bws_cache.enc.json", "root-creds file-safety", "Bitwarden Secrets Manager cache (encrypted)"),
    _store("pairing", "root-creds file-safety", "messaging pairing secrets"),
    _store("mcp-tokens", "root-creds file-safety", "MCP OAuth tokens"),
    _store("sessions", "root-creds file-safety", "conversation transcripts"),
    _store("browser-profile", "root-creds file-safety", "copied browser cookies and logins"),
    _store("vault", "file-safety", "credential vault (key and ciphertext side by side)"),
    *_sqlite("state.db", "root-creds file-safety", "conversation history"),
    *_sqlite("kanban.db", "root-creds", "kanban board"),
)

# Below a Hermes home these names are refused at any depth, not only at its top
# (sandboxguard's fetch did so before this list: a profile's or a skill's own .env).
HERMES_ANY_DEPTH_NAMES = (".env", "auth.json")
HERMES_DIR = ".hermes"
PROFILES_DIR = "profiles"


def _parts(rel):
    return tuple(part for part in rel.split("/") if part)


def home_stores(consumer):
    """Home-relative store paths that ``consumer`` ("fetch" or "bwrap") applies, in list order."""
    if consumer not in ("fetch", "bwrap"):
        raise ValueError("consumer must be 'fetch' or 'bwrap', got %r" % (consumer,))
    return tuple(s.path for s in HOME_STORES if s.scope in ("all", consumer))


def hermes_stores():
    """Store paths relative to a Hermes home, in list order."""
    return tuple(s.path for s in HERMES_STORES)


def is_home_store(rel, consumer="bwrap"):
    """True when the home-relative ``rel`` is a store of ``consumer`` or lies inside one."""
    parts = _parts(rel)
    return any(parts[:len(p)] == p for p in (_parts(s) for s in home_stores(consumer)))


def store_under(rel, consumer="bwrap"):
    """The first store of ``consumer`` strictly inside the home-relative ``rel`` (a directory), else None."""
    parts = _parts(rel)
    for store in home_stores(consumer):
        sparts = _parts(store)
        if len(sparts) > len(parts) and sparts[:len(parts)] == parts:
            return store
    return None


def _find_sequence(parts, seq):
    """Index of the first occurrence of ``seq`` as consecutive items of ``parts``, else -1."""
    n = len(seq)
    for i in range(len(parts) - n + 1):
        if parts[i:i + n] == seq:
            return i
    return -1


def match_hermes_relative(parts):
    """Which Hermes store the components ``parts`` (relative to a Hermes home) name, or None.

    Matches a store at the top of the Hermes home or of one of its profiles
    (``profiles/<name>/``), and the names of ``HERMES_ANY_DEPTH_NAMES`` at any depth.
    """
    parts = tuple(parts)
    tops = [parts]
    if len(parts) > 2 and parts[0] == PROFILES_DIR:
        tops.append(parts[2:])
    for top in tops:
        for store in hermes_stores():
            sparts = _parts(store)
            if top[:len(sparts)] == sparts:
                return store
    if parts and parts[-1] in HERMES_ANY_DEPTH_NAMES:
        return parts[-1]
    return None


def match_components(parts, consumer="fetch"):
    """A description of the store that the path components ``parts`` hold, or None.

    A home store matches as consecutive components at any position of ``parts`` (so
    ``project/.ssh/x`` matches ``.ssh``); a Hermes store matches below any ``.hermes``
    component. The caller decides what ``parts`` is relative to: the home when it is
    known, the whole path when it is not.
    """
    parts = tuple(parts)
    for store in home_stores(consumer):
        if _find_sequence(parts, _parts(store)) >= 0:
            return "credential store %s" % store
    for index, part in enumerate(parts):
        if part == HERMES_DIR and index < len(parts) - 1:
            found = match_hermes_relative(parts[index + 1:])
            if found:
                return "Hermes credential store %s/%s" % (HERMES_DIR, found)
    return None


def relative_parts(path, root):
    """Components of ``path`` below ``root`` (``()`` for ``root`` itself); ``path`` must be under it."""
    root = root.rstrip("/")
    return _parts(path[len(root):])


def hidden_roots(home, hermes_home=None, consumer="bwrap"):
    """Absolute host paths of every store of ``consumer`` for ``home`` (existing or not),
    plus ``hermes_home`` when given. Pure: no resolving."""
    roots = [posixpath.join(home, store) for store in home_stores(consumer)] if home else []
    if hermes_home and hermes_home not in roots:
        roots.append(hermes_home)
    return roots

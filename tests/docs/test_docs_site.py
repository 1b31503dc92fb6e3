# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The built docs site (make docs) in a real browser: Debian's Chromium, headless, driven by
Playwright, offline (any request that is not a file of the site fails the test).

Every module page must render its Parameters table with exactly the options of the module's
argument spec (the spec the module hands AnsibleModule, or the one its action plugin
validates), each visible, under its own name, with its type and aliases; every role page its
argument specs' options; the Playbooks page every documented input; every guide its title;
and no page may link to a file the site does not have.

Runs in the docs venv (tools/docs.sh test, the docs-site step of make test), after the build.
SANDBOXGUARD_UPDATE_SCREENSHOT=1 also writes docs/docsite-module-page.png (the README's).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.parse

import pytest
import yaml

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("SANDBOXGUARD_DOCS_SITE", os.path.join(TOP, "build", "docs", "html"))
PAGES = os.path.join(SITE, "collections", "sandboxguard", "boundary")
SCREENSHOT = os.path.join(TOP, "docs", "docsite-module-page.png")
SCREENSHOT_MODULE = "setid_strip"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--hide-scrollbars"]
# How antsibull-docs shows an argument spec type on the page
TYPE_LINE = {"str": "string", "bool": "boolean", "int": "integer", "float": "float", "path": "path", "raw": "any",
             "dict": "dictionary", "list": "list", "jsonarg": "any", "json": "any", "bytes": "string", "bits": "string"}


def names(directory, suffix):
    path = os.path.join(TOP, *directory.split("/"))
    return sorted(n[:-len(suffix)] for n in os.listdir(path) if n.endswith(suffix) and not n.startswith("_"))


MODULES = names("plugins/modules", ".py")
ROLES = sorted(n for n in os.listdir(os.path.join(TOP, "roles"))
               if os.path.isfile(os.path.join(TOP, "roles", n, "meta", "argument_specs.yml")))
GUIDES = ["README"] + ["docs/" + n for n in names("docs", ".md")]

# The argument spec, as Ansible gets it: AnsibleModule is stopped at its first line and says
# what it was given; a module whose work is an action plugin's gives what that plugin validates.
EXTRACT = r"""
import importlib, json, os, runpy, sys
import ansible.module_utils.basic as basic

class Captured(Exception):
    pass

def capture(self, *args, **kwargs):
    raise Captured(kwargs["argument_spec"] if "argument_spec" in kwargs else args[0])

basic.AnsibleModule.__init__ = capture
base = "ansible_collections.sandboxguard.boundary.plugins."
specs = {}
for name in sys.argv[2:]:
    if os.path.exists(os.path.join(sys.argv[1], "plugins", "action", name + ".py")):
        specs[name] = importlib.import_module(base + "action." + name).ARGUMENT_SPEC
        continue
    try:
        runpy.run_module(base + "modules." + name, run_name="__main__")
    except Captured as exc:
        specs[name] = exc.args[0]
    else:
        raise SystemExit("%s never constructed AnsibleModule" % name)
print(json.dumps(specs, default=repr))
"""


@pytest.fixture(scope="module")
def argument_specs(tmp_path_factory):
    root = tmp_path_factory.mktemp("collections")
    os.makedirs(root / "ansible_collections" / "sandboxguard")
    os.symlink(TOP, root / "ansible_collections" / "sandboxguard" / "boundary")
    proc = subprocess.run([sys.executable, "-c", EXTRACT, TOP, *MODULES], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(root)), cwd=str(root), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def option_paths(spec, prefix=""):
    """{path: option spec} with suboptions as parent/child, as antsibull-docs anchors them."""
    found = {}
    for name, option in sorted(spec.items()):
        found[prefix + name] = option
        if option.get("options"):
            found.update(option_paths(option["options"], prefix + name + "/"))
    return found


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    playwright_sync = pytest.importorskip("playwright.sync_api")
    if not os.path.isfile(os.path.join(SITE, "index.html")):
        pytest.fail("no site at %s: run make docs (tools/docs.sh build) first" % SITE)
    profile = tempfile.mkdtemp(prefix="sgdocsite-chromium-", dir=str(tmp_path_factory.getbasetemp()))
    with playwright_sync.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 1000}, offline=True)
        yield context
        context.close()


class Page:
    """One page of the site, loaded; what it requested outside the site and its script errors."""

    def __init__(self, context, relpath):
        self.outside, self.errors = [], []
        self.page = context.new_page()
        self.page.route("**/*", self._route)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        response = self.page.goto("file://" + os.path.join(SITE, relpath))
        assert response is None or response.ok, relpath
        self.page.wait_for_load_state("load")

    def _route(self, route):
        url = route.request.url
        if url.startswith("file://" + SITE + "/"):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def close(self):
        self.page.close()
        assert self.outside == [], "requested outside the site: %s" % self.outside
        assert self.errors == [], "script errors: %s" % self.errors


OPTION_ROWS = """(sectionId) => {
  const section = document.getElementById(sectionId);
  if (!section) return null;
  const table = section.querySelector('table.ansible-option-table');
  if (!table) return [];
  return [...table.querySelectorAll('tbody tr')].map(row => {
    const cell = row.querySelector('td'), box = cell.getBoundingClientRect();
    const title = cell.querySelector('.ansible-option-title'), type = cell.querySelector('.ansible-option-type');
    return {anchors: [...cell.querySelectorAll('div.ansibleOptionAnchor')].map(a => a.id),
            title: title ? title.innerText.trim() : null, type: type ? type.closest('p').innerText.trim() : '',
            text: row.innerText, visible: box.width > 0 && box.height > 0 && title && title.offsetParent !== null};
  });
}"""


# The page's title as shown, without the permalink sign Sphinx adds to it
HEADING = """() => {
  const h1 = document.querySelector('h1').cloneNode(true);
  h1.querySelectorAll('a.headerlink').forEach(a => a.remove());
  return h1.innerText.trim();
}"""


@pytest.mark.parametrize("module", MODULES)
def test_module_page_renders_every_option_of_its_argument_spec(browser, argument_specs, module):
    page = Page(browser, "collections/sandboxguard/boundary/%s_module.html" % module)
    rows = page.page.evaluate(OPTION_ROWS, "parameters")
    heading = page.page.evaluate(HEADING)
    page.close()
    assert "sandboxguard.boundary.%s module" % module in heading
    expected = option_paths(argument_specs[module])
    assert rows is not None, "no Parameters section on the %s page" % module
    # a row's first anchor is the option's path, the others its aliases
    shown = {row["anchors"][0][len("parameter-"):]: row for row in rows if row["anchors"]}
    assert len(shown) == len(rows), "a row of the %s options table has no anchor" % module
    assert sorted(shown) == sorted(expected), "options table of %s differs from its argument spec" % module
    for path, option in expected.items():
        row = shown[path]
        assert row["visible"], "%s: option %s is not visible" % (module, path)
        assert row["title"] == path.rsplit("/", 1)[-1], (module, path, row["title"])
        kind = TYPE_LINE.get(option.get("type", "str"), option.get("type"))
        assert row["type"].startswith(kind), "%s: %s shows type %r, the spec says %s" % (
            module, path, row["type"], kind)
        if option.get("elements"):
            assert "elements=%s" % TYPE_LINE[option["elements"]] in row["type"], (module, path, row["type"])
        parent = path.rpartition("/")[0]
        aliases = ["parameter-" + (parent + "/" if parent else "") + a for a in option.get("aliases") or []]
        assert row["anchors"][1:] == aliases, (module, path, row["anchors"])
        for alias in option.get("aliases") or []:
            assert re.search(r"aliases:.*\b%s\b" % re.escape(alias), row["text"]), (module, path, alias)


@pytest.mark.parametrize("role", ROLES)
def test_role_page_renders_every_option_of_its_argument_specs(browser, role):
    with open(os.path.join(TOP, "roles", role, "meta", "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    page = Page(browser, "collections/sandboxguard/boundary/%s_role.html" % role)
    ids = page.page.evaluate("() => [...document.querySelectorAll('div.ansibleOptionAnchor')]"
                             ".filter(a => a.closest('td').getBoundingClientRect().height > 0).map(a => a.id)")
    page.close()
    for entry, spec in specs.items():
        expected = {"parameter-%s--%s" % (entry, path) for path in option_paths(spec.get("options") or {})}
        assert sorted(expected - set(ids)) == [], "%s role, entry point %s" % (role, entry)


def test_playbooks_page_lists_every_input_of_every_playbook(browser):
    with open(os.path.join(TOP, "docs", "docsite", "inputs.yml")) as handle:
        spec = yaml.safe_load(handle)
    page = Page(browser, "collections/sandboxguard/boundary/docsite/playbooks.html")
    sections = page.page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('section section')].map(
        s => [s.querySelector('h2').innerText, [...s.querySelectorAll('table tbody tr td:first-child')].map(
            td => td.innerText.trim())]))""")
    page.close()
    assert len(sections) == len(spec["playbooks"])
    for name, play in spec["playbooks"].items():
        [title] = [t for t in sections if t.startswith("sandboxguard.boundary.%s " % name)]
        assert sections[title] == play["inputs"], name


@pytest.mark.parametrize("guide", GUIDES)
def test_guide_renders_with_its_title(browser, guide):
    with open(os.path.join(TOP, guide + ".md")) as handle:
        title = next(line for line in handle if line.startswith("# "))[2:].strip()
    page = Page(browser, guide + ".html")
    heading = page.page.evaluate(HEADING)
    page.close()
    assert heading.replace("`", "") == title.replace("`", "")


def test_index_links_the_collection_the_playbooks_and_every_guide(browser):
    page = Page(browser, "index.html")
    hrefs = page.page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))")
    collection = Page(browser, "collections/sandboxguard/boundary/index.html")
    collection_hrefs = collection.page.evaluate(
        "() => [...document.querySelectorAll('div[role=main] a[href]')].map(a => a.getAttribute('href'))")
    collection.close()
    page.close()
    for guide in GUIDES:
        assert guide + ".html" in hrefs, guide
    assert "collections/sandboxguard/boundary/index.html" in hrefs
    assert "docsite/playbooks.html" in collection_hrefs and "docsite/guides.html" in collection_hrefs
    targets = {href.split("#")[0] for href in collection_hrefs}
    for module in MODULES:
        assert "%s_module.html" % module in targets, module
    for role in ROLES:
        assert "%s_role.html" % role in targets, role


def local_links(html, page):
    for href in re.findall(r'(?:href|src)="([^"]+)"', html):
        parsed = urllib.parse.urlparse(href)
        if parsed.scheme or parsed.netloc or not parsed.path:
            continue
        yield href, os.path.normpath(os.path.join(os.path.dirname(page), urllib.parse.unquote(parsed.path)))


def test_no_page_links_to_a_file_the_site_does_not_have():
    broken = []
    for dirpath, _, files in os.walk(SITE):
        for name in files:
            if not name.endswith(".html"):
                continue
            page = os.path.join(dirpath, name)
            with open(page, encoding="utf-8") as handle:
                html = handle.read()
            broken += ["%s -> %s" % (os.path.relpath(page, SITE), href)
                       for href, target in local_links(html, page) if not os.path.exists(target)]
    assert broken == []


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_module_page_screenshot(browser, tmp_path):
    """The page a user lands on from ansible-doc's world: the options table of setid_strip."""
    page = Page(browser, "collections/sandboxguard/boundary/%s_module.html#parameters" % SCREENSHOT_MODULE)
    shot = tmp_path / "module-page.png"
    page.page.screenshot(path=str(shot))
    page.close()
    width, height = png_size(shot.read_bytes())
    assert (width, height) == (1280, 1000)
    if os.environ.get("SANDBOXGUARD_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shot, SCREENSHOT)


def test_docs_keep_a_screenshot_of_a_module_page():
    with open(SCREENSHOT, "rb") as handle:
        width, height = png_size(handle.read())
    assert width >= 800 and height >= 600

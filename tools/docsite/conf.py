# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Sphinx settings of the docs site (tools/docsite.py build passes -c tools/docsite).

From antsibull-docs sphinx-init, offline: intersphinx reads a local inventory of the Ansible
docs labels the pages refer to (tools/docsite.py writes it), never a URL; Markdown guides
through myst-parser; no analytics, no ads, no remote fonts.
"""
import os

project = "sandboxguard.boundary"
copyright = "sandboxguard contributors"
version = release = os.environ.get("SANDBOXGUARD_DOCS_VERSION", "")
title = "sandboxguard.boundary documentation"
html_title = "sandboxguard.boundary %s" % release
html_short_title = "sandboxguard.boundary"

extensions = ["sphinx.ext.intersphinx", "sphinx_antsibull_ext", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["docs/docsite/**"]

pygments_style = "ansible"
highlight_language = "none"

html_theme = "sphinx_ansible_theme"
html_show_sphinx = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {
    "display_version": False,
    "show_extranav": False,
    "show_rtd_ethical_ads": False,
    "documentation_home_url": os.environ.get("SANDBOXGUARD_DOCS_HOMEPAGE", "https://github.com/sandboxguard/boundary"),
    "topbar_links": {
        "Repository": "https://github.com/sandboxguard/boundary",
        "Issues": "https://github.com/sandboxguard/boundary/issues",
    },
}

intersphinx_mapping = {
    "ansible_devel": ("https://docs.ansible.com/projects/ansible/devel/",
                      os.environ.get("SANDBOXGUARD_DOCS_INVENTORY", "ansible.inv")),
}
intersphinx_disabled_reftypes = []
intersphinx_timeout = 1

myst_heading_anchors = 4

default_role = "any"
nitpicky = True

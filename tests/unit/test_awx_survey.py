# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The importable AWX surveys (docs/awx/survey-*.json) and the job-template examples of
docs/awx.md, checked against what they describe (issue 27 item 6):

- each survey is a survey spec AWX accepts (the rules of AWX's survey_spec endpoint:
  awx/api/views ``_validate_spec_data``, written out below);
- every survey variable is an input its playbook reads (found in the playbook's YAML, as
  docs/docsite/inputs.yml declares them), of a survey type that carries the input's type, and
  its choices are the values the collection accepts (the library's constants);
- every input a not-checked reason tells the operator to set is in the audit's survey;
- the awx.awx job-template example uses only options ``awx.awx.job_template`` has, the surveys
  it loads exist, and the playbooks it runs are the collection's.
"""
import json
import os
import re

import pytest
import repo_scan as scan
from sandboxguard._core import inputs as input_rules
from sandboxguard._fleet import audit, audit_record
from sandboxguard._terminal.modes import MODES

yaml = pytest.importorskip("yaml")  # the pythons layer's venvs carry only pytest

docsite = scan.tool("docsite")
SURVEYS = {"audit": "docs/awx/survey-audit.json", "remediate": "docs/awx/survey-remediate.json"}
# AWX's survey question types and the Python type of their defaults (awx.main.models.mixins SURVEY_TYPE_MAPPING)
SURVEY_TYPE_MAPPING = {"text": str, "textarea": str, "password": str, "multiplechoice": str, "multiselect": str,
                       "integer": int, "float": (float, int)}
# which survey types can carry an input of each inputs.yml type (AWX has no list, bool or unset type)
CARRIES = {"list": {"text", "textarea", "multiselect"}, "str": {"text", "textarea", "multiplechoice"},
           "raw": {"text", "integer", "float", "multiplechoice"}}
BOOLEAN_INPUTS = ("sandboxguard_fail_on_findings", "sandboxguard_allow_not_checked")
CHOICES = {"sandboxguard_home_mode": set(MODES), "sandboxguard_docker": set(audit.DOCKER_MODES),
           "sandboxguard_checks": set(audit_record.CHECKS)}


def load(name):
    return json.loads(scan.read(SURVEYS[name]))


def awx_survey_errors(spec):
    """What AWX's survey_spec endpoint says of *spec* (empty when it accepts it)."""
    errors = []
    for field, kind in (("name", str), ("description", str), ("spec", list)):
        if not isinstance(spec.get(field), kind):
            errors.append("%s: missing or not a %s" % (field, kind.__name__))
    if errors:
        return errors
    if not spec["spec"]:
        return ["spec: no questions"]
    seen = set()
    for index, item in enumerate(spec["spec"]):
        where = "question %d" % index
        if not isinstance(item, dict):
            errors.append("%s: not an object" % where)
            continue
        for field in ("type", "question_name", "variable", "required"):
            if field not in item:
                errors.append("%s: %s missing" % (where, field))
            elif not isinstance(item[field], bool if field == "required" else str):
                errors.append("%s: %s of the wrong type" % (where, field))
        if item.get("variable") in seen:
            errors.append("%s: variable %s twice" % (where, item.get("variable")))
        seen.add(item.get("variable"))
        qtype = item.get("type")
        if qtype not in SURVEY_TYPE_MAPPING:
            errors.append("%s: type %r" % (where, qtype))
            continue
        default = item.get("default", "")
        if default != "" and not isinstance(default, SURVEY_TYPE_MAPPING[qtype]):
            errors.append("%s: default %r is no %s" % (where, default, qtype))
        for key in ("min", "max"):
            if item.get(key) is not None and not isinstance(item[key], int):
                errors.append("%s: %s not an integer" % (where, key))
        if qtype in ("multiplechoice", "multiselect"):
            choices = item.get("choices")
            choices = choices.splitlines() if isinstance(choices, str) else list(choices or ())
            if not [c for c in choices if str(c).strip()]:
                errors.append("%s: no choices" % where)
            defaults = [d for d in default.splitlines() if d.strip()] if isinstance(default, str) else list(default)
            if qtype == "multiplechoice" and len(defaults) > 1:
                errors.append("%s: more than one default" % where)
            if any(d not in choices for d in defaults):
                errors.append("%s: default not among the choices" % where)
        elif qtype in ("text", "textarea") and isinstance(default, str) and item.get("max") is not None \
                and len(default) > item["max"]:
            errors.append("%s: default longer than max" % where)
    return errors


@pytest.mark.parametrize("name", sorted(SURVEYS))
def test_the_survey_is_a_spec_awx_accepts(name):
    assert awx_survey_errors(load(name)) == []


def test_the_awx_rules_written_here_refuse_what_awx_refuses():
    good = load("audit")
    for broken in (
            {**good, "spec": []},
            {**good, "spec": [{**good["spec"][0], "type": "list"}]},
            {**good, "spec": [{**good["spec"][0], "required": "false"}]},
            {**good, "spec": [good["spec"][0], good["spec"][0]]},
            {**good, "spec": [{"type": "multiplechoice", "question_name": "q", "variable": "v", "required": False,
                               "choices": ["a", "b"], "default": "c"}]},
            {**good, "spec": [{"type": "integer", "question_name": "q", "variable": "v", "required": False,
                               "default": "ten"}]}):
        assert awx_survey_errors(broken), broken


@pytest.mark.parametrize("name", sorted(SURVEYS))
def test_every_survey_variable_is_an_input_the_playbook_reads_of_a_type_that_carries_it(name):
    spec = docsite.load_inputs()
    read = docsite.playbook_reads(scan.path("playbooks/%s.yml" % name))
    for item in load(name)["spec"]:
        variable = item["variable"]
        assert variable in read, "%s is not read by playbooks/%s.yml" % (variable, name)
        declared = spec["inputs"][variable]
        assert item["type"] in CARRIES[declared["type"]], (variable, item["type"], declared["type"])
        assert item["required"] is False, "%s: every input is optional (blank means unset)" % variable


@pytest.mark.parametrize("name", sorted(SURVEYS))
def test_choices_are_the_values_the_collection_accepts_and_defaults_mean_the_documented_ones(name):
    declared = docsite.load_inputs()["inputs"]
    for item in load(name)["spec"]:
        variable = item["variable"]
        if variable in BOOLEAN_INPUTS:
            assert set(item["choices"]) == {"true", "false"}, variable
            assert input_rules.as_bool(item["default"], None, variable) == bool(declared[variable]["default"])
        elif variable in CHOICES:
            assert set(item["choices"]) == CHOICES[variable], variable
        if item["type"] == "multiselect":  # AWX sends the selection as a list, the default as lines
            assert input_rules.as_list(item["default"].splitlines()) == declared[variable]["default"], variable


def test_the_audit_survey_asks_for_every_input_a_not_checked_reason_names():
    """What a host needs for every check to look at something is in the survey: the reasons of
    an audit given nothing name the variables to set, and each is a survey field."""
    record = audit.audit_host(docker="never")
    reasons = " ".join(c["reason"] for c in record["checks"].values())
    named = set(re.findall(r"\bsandboxguard_[a-z][a-z_]*", reasons))
    assert {"sandboxguard_hermes_homes", "sandboxguard_home_mode", "sandboxguard_agent_user"} <= named
    variables = {item["variable"] for item in load("audit")["spec"]}
    assert named <= variables, sorted(named - variables)
    assert {"sandboxguard_checks", "sandboxguard_allow_not_checked"} <= variables


def test_the_remediate_survey_has_the_audit_s_scope_fields():
    audit_scope = {i["variable"] for i in load("audit")["spec"]} - {
        "sandboxguard_checks", "sandboxguard_allow_not_checked", "sandboxguard_fail_on_findings",
        "sandboxguard_report_dir"}
    assert audit_scope <= {i["variable"] for i in load("remediate")["spec"]}


def fenced(marker):
    text = scan.read("docs/awx.md")
    found = re.findall(r"<!-- %s: begin[^>]*-->\s*```yaml\n(.*?)```\s*<!-- %s: end -->" % (marker, marker), text, re.S)
    assert len(found) == 1, marker
    return yaml.safe_load(found[0])


def job_template_options():
    """awx.awx.job_template's options, from its DOCUMENTATION (the `ansible` package ships awx.awx)."""
    import importlib.util

    spec = importlib.util.find_spec("ansible_collections.awx.awx")
    if spec is None:
        pytest.skip("awx.awx is not installed here")
    return set(scan.literal(os.path.join(next(iter(spec.submodule_search_locations)), "plugins", "modules",
                                         "job_template.py"))["options"])


def check_template(template, options):
    unknown = sorted(set(template) - options)
    assert unknown == [], "%s: not options of awx.awx.job_template: %s" % (template.get("name"), unknown)
    match = re.fullmatch(r"sandboxguard-(\w+)\.yml", template["playbook"])
    assert match and os.path.exists(scan.path("playbooks/%s.yml" % match.group(1))), template["playbook"]
    survey = re.search(r"'(docs/awx/survey-\w+\.json)'", template["survey_spec"]).group(1)
    assert os.path.exists(scan.path(survey)), survey
    assert survey.endswith("survey-%s.json" % match.group(1)), "the survey of the playbook the template runs"
    assert template["become_enabled"] is True and template["survey_enabled"] is True


def test_the_awx_job_template_example_uses_awx_awx_job_template_options_and_our_playbooks_and_surveys():
    options = job_template_options()
    [play] = fenced("awx-job-templates")
    templates = [t["awx.awx.job_template"] for t in play["tasks"] if "awx.awx.job_template" in t]
    assert {t["name"] for t in templates} == {"sandboxguard audit", "sandboxguard remediate"}
    for template in templates:
        check_template(template, options)
    [schedule] = [t["awx.awx.schedule"] for t in play["tasks"] if "awx.awx.schedule" in t]
    assert schedule["unified_job_template"] == "sandboxguard audit" and "RRULE:FREQ=" in schedule["rrule"]


def test_the_controller_configuration_example_has_the_same_templates():
    options = job_template_options()
    templates = fenced("controller-configuration")["controller_templates"]
    assert {t["name"] for t in templates} == {"sandboxguard audit", "sandboxguard remediate"}
    for template in templates:
        check_template(template, options)

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The job JSON gate: doc/schemas/job-request-1.json, job-result-1.json and
run-result-1.json.

  * the files are JSON, and draft 2020-12 schemas with the expected $id;
  * every ```json block of doc/job.md validates against one of them: a
    block with "jobs" and "status" is a run's result (and each job in it
    that ran is checked against the job result schema), one with "status"
    a job's result, any other a request;
  * requests the library refuses (when loading them, or, for a bad
    packageManager, when running them) are refused by the schema, and a
    few it takes are taken.

Validation uses python3-jsonschema when it is installed (and then also
checks the schemas themselves against the metaschema), and always a small
validator of the keywords these schemas use, so the gate runs without it.
usage: check-job-schemas.py SRCDIR
"""
import json
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "."
errors = []


def load(rel):
    path = os.path.join(src, rel)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        errors.append(f"{rel}: {e}")
        return None


# ---- a validator for the subset of draft 2020-12 the schemas use -------------

SUPPORTED = {
    "$schema", "$id", "$defs", "$ref", "title", "description", "type", "enum", "const",
    "properties", "required", "additionalProperties", "items", "prefixItems", "minItems",
    "maxItems", "minLength", "pattern", "minimum", "maximum", "oneOf",
}


def walk_keywords(schema, where, out):
    """Every keyword used, so that an unsupported one fails loudly."""
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k not in SUPPORTED:
                out.append(f"{where}: keyword {k!r} not supported by the built-in validator")
            if k in ("properties", "$defs"):
                for name, sub in v.items():
                    walk_keywords(sub, f"{where}/{k}/{name}", out)
            elif k in ("items", "additionalProperties"):
                walk_keywords(v, f"{where}/{k}", out)
            elif k in ("prefixItems", "oneOf"):
                for i, sub in enumerate(v):
                    walk_keywords(sub, f"{where}/{k}/{i}", out)


def type_ok(v, t):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "integer":  # as JSON Schema counts them: 1.0 is one
        return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    raise ValueError(f"type {t}")


def validate(v, schema, root, path="$"):
    """The list of errors of instance v against schema."""
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [f"{path}: not allowed"]
    errs = []
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            return [f"{path}: unsupported $ref {ref}"]
        errs += validate(v, root["$defs"][ref[len("#/$defs/"):]], root, path)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(type_ok(v, t) for t in types):
            return errs + [f"{path}: {json.dumps(v)[:60]} is not of type {schema['type']}"]
    if "const" in schema and v != schema["const"]:
        errs.append(f"{path}: must be {json.dumps(schema['const'])}")
    if "enum" in schema and v not in schema["enum"]:
        errs.append(f"{path}: {json.dumps(v)[:60]} is not one of {schema['enum']}")
    if "oneOf" in schema:
        n = sum(1 for sub in schema["oneOf"] if not validate(v, sub, root, path))
        if n != 1:
            errs.append(f"{path}: matches {n} of oneOf, expected exactly 1")
    if isinstance(v, str):
        if "minLength" in schema and len(v) < schema["minLength"]:
            errs.append(f"{path}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], v):
            errs.append(f"{path}: {json.dumps(v)[:60]} does not match {schema['pattern']}")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in schema and v < schema["minimum"]:
            errs.append(f"{path}: below {schema['minimum']}")
        if "maximum" in schema and v > schema["maximum"]:
            errs.append(f"{path}: above {schema['maximum']}")
    if isinstance(v, list):
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(v):
            if i < len(prefix):
                errs += validate(item, prefix[i], root, f"{path}[{i}]")
            if "items" in schema and i >= len(prefix):
                errs += validate(item, schema["items"], root, f"{path}[{i}]")
        if "minItems" in schema and len(v) < schema["minItems"]:
            errs.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(v) > schema["maxItems"]:
            errs.append(f"{path}: more than {schema['maxItems']} items")
    if isinstance(v, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in v:
                errs.append(f"{path}: {k!r} is required")
        for k, item in v.items():
            if k in props:
                errs += validate(item, props[k], root, f"{path}.{k}")
            elif "additionalProperties" in schema:
                errs += validate(item, schema["additionalProperties"], root, f"{path}.{k}")
    return errs


try:
    import jsonschema  # python3-jsonschema
except ImportError:
    jsonschema = None


def check(v, schema):
    """Errors of v against schema, by both validators; they must agree."""
    own = validate(v, schema, schema)
    if jsonschema is None:
        return own
    theirs = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(v)]
    if bool(own) != bool(theirs):
        return [f"the validators disagree: built-in {own or 'valid'}, jsonschema {theirs or 'valid'}"]
    return own


# ---- the schemas ------------------------------------------------------------

schemas = {}
for key, rel, sid in (("request", "doc/schemas/job-request-1.json", "urn:sbxrun:schema:sbxrun.job.request/1"),
                      ("result", "doc/schemas/job-result-1.json", "urn:sbxrun:schema:sbxrun.job.result/1"),
                      ("run", "doc/schemas/run-result-1.json", "urn:sbxrun:schema:sbxrun.run.result/1")):
    s = load(rel)
    if s is None:
        continue
    if s.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
        errors.append(f"{rel}: $schema is not draft 2020-12")
    if s.get("$id") != sid:
        errors.append(f"{rel}: $id is not {sid}")
    kw = []
    walk_keywords(s, rel, kw)
    errors += kw
    if jsonschema is not None:
        try:
            jsonschema.Draft202012Validator.check_schema(s)
        except jsonschema.exceptions.SchemaError as e:
            errors.append(f"{rel}: not a valid schema: {e.message}")
    schemas[key] = s

# ---- the examples in doc/job.md -------------------------------------------------

doc = os.path.join(src, "doc/job.md")
text = open(doc, encoding="utf-8").read()
counts = {"request": 0, "result": 0, "run": 0}
for m in re.finditer(r"^```json\n(.*?)^```", text, re.S | re.M):
    line = text.count("\n", 0, m.start()) + 1
    try:
        v = json.loads(m.group(1))
    except ValueError as e:
        errors.append(f"doc/job.md:{line}: the json block is not JSON: {e}")
        continue
    if isinstance(v, dict) and "status" in v:
        kind = "run" if "jobs" in v else "result"
    else:
        kind = "request"
    counts[kind] += 1
    if kind in schemas:
        errors += [f"doc/job.md:{line}: {kind}: {e}" for e in check(v, schemas[kind])]
    if kind == "run" and "result" in schemas and isinstance(v.get("jobs"), list):
        for i, j in enumerate(v["jobs"]):
            if isinstance(j, dict) and "schema" in j:
                errors += [f"doc/job.md:{line}: jobs[{i}]: {e}" for e in check(j, schemas["result"])]
for kind, n in counts.items():
    if n == 0:
        errors.append(f"doc/job.md: no {kind} example")

# ---- what the library refuses, the schema refuses --------------------------------

refused = [
    {},                                                           # jobType is missing
    {"jobType": "verify.unit"},                                   # unknown type
    {"jobType": "verify.test", "extra": 1},                       # unknown field
    {"jobType": "verify.test", "schema": "sbxrun.job.request/2"},
    {"jobType": "verify.test", "timeoutSeconds": 604801},
    {"jobType": "verify.test", "timeoutSeconds": -1},
    {"jobType": "verify.test", "timeoutSeconds": 1.5},
    {"jobType": "verify.test", "inputs": {"verbose": "1"}},       # unknown input
    {"jobType": "verify.test", "inputs": {"dir": ""}},
    {"jobType": "verify.test", "inputs": {"script": "--inspect"}},
    {"jobType": "verify.test", "inputs": {"packageManager": "deno"}},  # at the run
    {"jobType": "verify.test", "inputs": {"dir": True}},
    {"jobType": "repo.clone", "inputs": {"url": "https://h/r.git", "depth": -1}},
    {"jobType": "repo.clone", "inputs": {"url": "https://h/r.git", "depth": "1x"}},
    {"jobType": "repo.clone", "inputs": {"url": "https://h/r.git", "ref": "a\nb"}},
    {"jobType": "verify.test", "envKeys": ["1ABC"]},
    {"jobType": "verify.test", "envKeys": ["A-B"]},
    {"jobType": "verify.test", "command": [""]},
    {"jobType": "verify.test", "command": "npm test"},
    {"jobType": "verify.test", "artifacts": [1]},
]
accepted = [
    {"jobType": "verify.test"},
    {"jobType": "verify.test", "timeoutSeconds": 60.0},             # a whole number
    {"schema": "sbxrun.job.request/1", "jobType": "repo.clone",
     "inputs": {"url": "https://h/r.git", "depth": 0}, "timeoutSeconds": 0},
    {"jobType": "verify.test", "command": ["node", "--test", ""], "envKeys": ["_A1"]},
]
if "request" in schemas:
    for r in refused:
        if not check(r, schemas["request"]):
            errors.append(f"request schema accepts {json.dumps(r)}, which the library refuses")
    for r in accepted:
        errors += [f"request schema refuses {json.dumps(r)}: {e}" for e in check(r, schemas["request"])]

if errors:
    print("\n".join("FAIL: " + e for e in errors))
    sys.exit(1)
# ---- a run's result: what the library writes, the schema takes, and no more -------

run_ok = {"schema": "sbxrun.run.result/1", "status": "denied", "retryable": False,
          "message": "verify.lint: step verify.lint denied by the command policy (program_not_allowed): ...",
          "sandboxId": None, "durationMs": 0, "outputBytes": 0,
          "jobs": [{"jobType": "verify.lint", "status": "skipped"}]}
run_bad = [
    dict(run_ok, status="skipped"),                                  # not a run verdict
    dict(run_ok, jobs=[{"jobType": "verify.lint", "status": "passed"}]),  # a job that ran has its result
    dict(run_ok, jobs=[{"jobType": "verify.lint", "status": "skipped", "message": None}]),
    {k: v for k, v in run_ok.items() if k != "outputBytes"},
    dict(run_ok, extra=1),
]
if "run" in schemas:
    errors += [f"run schema refuses {json.dumps(run_ok)}: {e}" for e in check(run_ok, schemas["run"])]
    for r in run_bad:
        if not check(r, schemas["run"]):
            errors.append(f"run schema accepts {json.dumps(r)}, which the library never writes")

print(f"OK: 3 schemas, {counts['request']} request, {counts['result']} job result and {counts['run']} run"
      f" result examples in doc/job.md"
      f" ({'jsonschema and ' if jsonschema else ''}the built-in validator)")

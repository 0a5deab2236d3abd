#!/usr/bin/env python3
"""Validates Kubernetes manifests offline, as strictly as `kubectl apply` (field validation
Strict) would (llmscope issue 15).

- Built-in kinds (Deployment, Service, ...): kubernetes-validate (PyPI) with its bundled
  Kubernetes JSON schemas, strict variant: an unknown field is an error.
- Custom resources (ServiceMonitor, PrometheusRule, ...): the openAPIV3Schema of the CRD files
  given with --crd, made strict the way the API server treats a structural schema: an object
  schema that lists `properties` accepts no other field unless it says
  `x-kubernetes-preserve-unknown-fields` or has `additionalProperties`. Their `metadata` is
  checked against the strict ObjectMeta of the same Kubernetes version.

kubernetes-validate alone only warns about a kind it has no schema for and exits 0, so a CR
would pass unchecked; here a kind found in neither place is an error.

Usage: validate.py [--kubernetes-version 1.31] --crd CRD.yaml... MANIFEST.yaml...
Exit status: 0 all valid, 1 some invalid, 2 usage error.
"""

import argparse
import copy
import sys

import jsonschema
import kubernetes_validate
import referencing
import yaml
from kubernetes_validate import utils

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def strict(schema):
    """A copy of an OpenAPI v3 (CRD) schema in which objects reject unknown fields."""
    s = copy.copy(schema)
    if "properties" in s:
        s["properties"] = {k: strict(v) for k, v in s["properties"].items()}
        if "additionalProperties" not in s and not s.get("x-kubernetes-preserve-unknown-fields"):
            s["additionalProperties"] = False
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = strict(s["additionalProperties"])
    if isinstance(s.get("items"), dict):
        s["items"] = strict(s["items"])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in s:
            s[key] = [strict(x) for x in s[key]]
    # OpenAPI v3 keywords JSON Schema does not know are ignored by jsonschema; `nullable` is not
    # used by these CRDs.
    return s


def load_crds(paths):
    """(group/version, kind) -> the strict schema of that served version."""
    out = {}
    for path in paths:
        with open(path) as f:
            for crd in yaml.safe_load_all(f):
                if not crd or crd.get("kind") != "CustomResourceDefinition":
                    continue
                spec = crd["spec"]
                for version in spec["versions"]:
                    key = ("%s/%s" % (spec["group"], version["name"]), spec["names"]["kind"])
                    out[key] = strict(version["schema"]["openAPIV3Schema"])
    return out


def object_meta(k8s_version):
    """The strict ObjectMeta schema of the bundled Kubernetes JSON schemas, and its registry."""
    version = [v for v in utils.all_versions()
               if utils.major_minor(v) <= utils.major_minor(k8s_version)][-1]
    defs = utils.schema_contents(
        "kubernetes-json-schema/v%s-local-strict/_definitions.json" % version, k8s_version)
    registry = referencing.Registry().with_resource(
        defs["$id"], referencing.Resource.from_contents(defs))
    return {"$ref": "%s#/$defs/%s" % (defs["$id"], OBJECT_META)}, registry


def where(error):
    return ".".join(str(p) for p in error.absolute_path) or "(root)"


def check_custom(doc, schema, meta, registry):
    errors = []
    metadata = doc.get("metadata")
    validator = jsonschema.Draft202012Validator({**schema, "properties": {
        **schema.get("properties", {}), "metadata": {"type": "object"}}})
    errors += ["%s: %s" % (where(e), e.message) for e in validator.iter_errors(doc)]
    if metadata is not None:
        mv = jsonschema.Draft202012Validator(meta, registry=registry)
        errors += ["metadata.%s: %s" % (where(e), e.message) for e in mv.iter_errors(metadata)]
    return errors


def check_builtin(doc, k8s_version):
    try:
        kubernetes_validate.validate(doc, k8s_version, strict=True)
        return []
    except utils.SchemaNotFoundError as e:
        return [e.message + " (and no --crd defines it)"]
    except utils.ValidationError as e:
        return ["%s: %s" % (".".join(str(p) for p in e.path) or "(root)", e.message)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kubernetes-version", default="1.31")
    ap.add_argument("--crd", action="append", default=[], help="a CRD file (repeatable)")
    ap.add_argument("manifests", nargs="+")
    args = ap.parse_args()
    crds = load_crds(args.crd)
    meta, registry = object_meta(args.kubernetes_version)
    failed = 0
    for path in args.manifests:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        if not docs:
            print("ERROR %s: no Kubernetes object" % path)
            failed += 1
        for doc in docs:
            name = "%s/%s" % (doc.get("kind", "?"), (doc.get("metadata") or {}).get("name", "?"))
            key = (doc.get("apiVersion"), doc.get("kind"))
            if key in crds:
                errors, against = check_custom(doc, crds[key], meta, registry), "its CRD"
            else:
                errors = check_builtin(doc, args.kubernetes_version)
                against = "Kubernetes %s" % args.kubernetes_version
            for e in errors:
                print("ERROR %s %s: %s" % (path, name, e))
            if errors:
                failed += 1
            else:
                print("OK %s %s (against %s, strict)" % (path, name, against))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

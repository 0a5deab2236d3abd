#!/usr/bin/env python3
"""Cuts a Grafana dashboard down to what `llmscope check` reads, for the check corpus
(crates/check/tests/corpus/): panel type, title, unit, thresholds and targets (expr, refId,
legend), rows and nested panels, and the templating variables. Layout, styling, descriptions
and everything else are dropped. Reads JSON on stdin (a dashboard, a {"dashboard": …} export,
or a ConfigMap-embedded one given with --key), writes the cut JSON on stdout.

  scripts/corpus-cut.py < dash.json > crates/check/tests/corpus/x.json

where dash.json is the text the stored index of public GitHub files returned for the file
(read_file with repo, path and commit, noted in the corpus's MANIFEST.tsv).
"""
import json
import sys


def ds_type(ds):
    if isinstance(ds, dict):
        return ds.get("type")
    if isinstance(ds, str):
        return ds
    return None


def keep_ds(ds):
    t = ds_type(ds)
    if t and "loki" in t.lower():
        return {"type": "loki"}
    return None


def thresholds(p):
    steps = (((p.get("fieldConfig") or {}).get("defaults") or {}).get("thresholds") or {}).get("steps")
    if not steps:
        return None
    return [s.get("value") for s in steps]


def panel(p):
    out = {}
    for k in ("type", "title"):
        if k in p:
            out[k] = p[k]
    d = keep_ds(p.get("datasource"))
    if d:
        out["datasource"] = d
    unit = ((p.get("fieldConfig") or {}).get("defaults") or {}).get("unit")
    th = thresholds(p)
    if unit or th:
        defaults = {}
        if unit:
            defaults["unit"] = unit
        if th:
            defaults["thresholds"] = {"steps": [{"value": v} for v in th]}
            mode = ((((p.get("fieldConfig") or {}).get("defaults") or {}).get("custom") or {}).get("thresholdsStyle") or {}).get("mode")
            if mode:
                defaults["custom"] = {"thresholdsStyle": {"mode": mode}}
        out["fieldConfig"] = {"defaults": defaults}
    if p.get("yaxes"):
        fmt = p["yaxes"][0].get("format")
        if fmt:
            out["yaxes"] = [{"format": fmt}]
    if p.get("thresholds") and isinstance(p["thresholds"], list):
        out["thresholds"] = [{"value": t.get("value"), "op": t.get("op")} for t in p["thresholds"]]
    targets = []
    for t in p.get("targets") or []:
        if not isinstance(t, dict) or not t.get("expr"):
            continue
        ct = {"refId": t.get("refId"), "expr": t["expr"]}
        if t.get("legendFormat"):
            ct["legendFormat"] = t["legendFormat"]
        d = keep_ds(t.get("datasource"))
        if d:
            ct["datasource"] = d
        targets.append(ct)
    if targets:
        out["targets"] = targets
    if p.get("panels"):
        out["panels"] = [panel(c) for c in p["panels"]]
    return out


def variable(v):
    out = {k: v[k] for k in ("name", "type") if k in v}
    q = v.get("query")
    if isinstance(q, dict):
        q = {"query": q.get("query")} if q.get("query") is not None else None
    if q not in (None, ""):
        out["query"] = q
    if v.get("type") == "datasource" and v.get("query"):
        out["query"] = v["query"]
    return out


def cut(d):
    if isinstance(d.get("dashboard"), dict):
        d = d["dashboard"]
    out = {"title": d.get("title")}
    tl = (d.get("templating") or {}).get("list")
    if tl:
        out["templating"] = {"list": [variable(v) for v in tl]}
    if d.get("panels") is not None:
        out["panels"] = [panel(p) for p in d["panels"]]
    if d.get("rows") is not None:
        out["rows"] = [{"title": r.get("title"), "panels": [panel(p) for p in r.get("panels") or []]} for r in d["rows"]]
    return out


def main():
    text = sys.stdin.read()
    if len(sys.argv) > 2 and sys.argv[1] == "--key":
        import yaml
        for doc in yaml.safe_load_all(text):
            if doc and "data" in doc and sys.argv[2] in doc["data"]:
                text = doc["data"][sys.argv[2]]
                break
    d = json.loads(text)
    json.dump(cut(d), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

//! `deploy/` (issue 15): the manifests of `llmscope watch` validate against the Kubernetes
//! schemas and the Prometheus Operator's CRDs, strictly (an unknown field fails); the
//! validator is shown to bite; the committed PrometheusRule is exactly what `llmscope rules
//! --watch` generates; and the pieces agree with each other (port, uid, release label).
//!
//! The validator is `deploy/validate/validate.py` in the venv `deploy/validate/install.sh`
//! makes (PyPI kubernetes-validate). Without it these tests skip and say so — except in CI.

use crate::common::{llmscope, temp_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn deploy(file: &str) -> PathBuf {
    repo().join("deploy").join(file)
}

fn read(file: &str) -> String {
    std::fs::read_to_string(deploy(file)).unwrap_or_else(|e| panic!("deploy/{file}: {e}"))
}

const MANIFESTS: [&str; 4] = [
    "deployment.yaml",
    "service.yaml",
    "servicemonitor.yaml",
    "prometheusrule.yaml",
];

/// The venv's python, or `None` (and a message) when the validator is not installed.
pub fn validator() -> Option<PathBuf> {
    let home = std::env::var_os("LLMSCOPE_K8S_VALIDATE_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
            Some(cache.join("llmscope/kubernetes-validate-1.37.0"))
        })?;
    let python = home.join("venv/bin/python");
    if python.is_file() {
        return Some(python);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI needs the manifest validator at {}: run deploy/validate/install.sh",
        home.display()
    );
    eprintln!(
        "skipped: no manifest validator at {} (run deploy/validate/install.sh)",
        home.display()
    );
    None
}

/// Runs the validator on `files`: (success, its report).
fn validate(python: &Path, files: &[PathBuf]) -> (bool, String) {
    let crds = deploy("validate/crds");
    let operator = [
        crds.join("monitoring.coreos.com_servicemonitors.yaml"),
        crds.join("monitoring.coreos.com_prometheusrules.yaml"),
    ];
    validate_with(python, &operator, files)
}

/// Runs the validator on `files` with these CRDs: (success, its report).
pub fn validate_with(python: &Path, crds: &[PathBuf], files: &[PathBuf]) -> (bool, String) {
    let mut cmd = Command::new(python);
    cmd.arg(deploy("validate/validate.py"));
    for crd in crds {
        cmd.arg("--crd").arg(crd);
    }
    let out = cmd.args(files).output().expect("run validate.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn deploy_manifests_validate_strictly_against_kubernetes_and_the_operator_crds() {
    let Some(python) = validator() else { return };
    let files: Vec<PathBuf> = MANIFESTS.iter().map(|f| deploy(f)).collect();
    let (ok, report) = validate(&python, &files);
    assert!(ok, "{report}");
    for kind in [
        "Deployment/llmscope-watch (against Kubernetes",
        "Service/llmscope-watch (against Kubernetes",
        "ServiceMonitor/llmscope-watch (against its CRD",
        "PrometheusRule/llmscope-watch (against its CRD",
    ] {
        assert!(report.contains(kind), "{kind} not validated:\n{report}");
    }
}

#[test]
fn the_validator_rejects_a_misspelt_field_in_each_kind() {
    let Some(python) = validator() else { return };
    let dir = temp_dir("deploy-validate");
    let cases = [
        // (file, from, to, what the report must name)
        (
            "deployment.yaml",
            "imagePullPolicy:",
            "imagePullPolicyy:",
            "'imagePullPolicyy' was unexpected",
        ),
        (
            "servicemonitor.yaml",
            "honorLabels:",
            "honorLabel:",
            "'honorLabel' was unexpected",
        ),
        (
            "servicemonitor.yaml",
            "kind: ServiceMonitor",
            "kind: ServiceMonitr",
            "no --crd defines it",
        ),
        (
            "prometheusrule.yaml",
            "    for: 2m",
            "    fore: 2m",
            "'fore' was unexpected",
        ),
        (
            "service.yaml",
            "  type: ClusterIP",
            "  type: 7",
            "spec.type",
        ),
    ];
    for (i, (file, from, to, named)) in cases.iter().enumerate() {
        let text = read(file);
        assert!(text.contains(from), "{file} has no `{from}`");
        let bad = dir.join(format!("{i}-{file}"));
        std::fs::write(&bad, text.replacen(from, to, 1)).unwrap();
        let (ok, report) = validate(&python, &[bad]);
        assert!(!ok, "{file} with `{to}` passed:\n{report}");
        assert!(report.contains(named), "{file}: {named}?\n{report}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `deploy/prometheusrule.yaml` is generated, never edited: regenerate it with the command in
/// the message when the watch alerts change.
#[test]
fn the_committed_prometheusrule_is_what_rules_watch_generates() {
    let args = [
        "rules",
        "--watch",
        "--crd",
        "--release",
        "kube-prometheus-stack",
        "--namespace",
        "monitoring",
        "--name",
        "llmscope-watch",
    ];
    let out = llmscope(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    assert!(generated.contains("LlmscopeWatchStale"));
    assert_eq!(
        read("prometheusrule.yaml"),
        generated,
        "deploy/prometheusrule.yaml drifted: llmscope {} -o deploy/prometheusrule.yaml",
        args.join(" ")
    );
}

/// What the manifests and the image recipe promise each other.
#[test]
fn the_manifests_and_the_containerfile_agree() {
    let value = |file: &str| -> serde_json::Value { serde_saphyr::from_str(&read(file)).unwrap() };
    let dep = value("deployment.yaml");
    let pod = &dep["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "watch");
    for a in [
        "--listen=0.0.0.0:9464",
        "--prometheus=http://prometheus-operated.monitoring.svc:9090",
    ] {
        assert!(args.contains(&a), "{args:?} lacks {a}");
    }
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"][0], "ALL");
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(c[probe]["httpGet"]["port"], "metrics", "{probe}");
    }
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    for r in ["requests", "limits"] {
        assert!(c["resources"][r]["memory"].is_string(), "{r}");
        assert!(c["resources"][r]["cpu"].is_string(), "{r}");
    }
    assert_eq!(c["ports"][0]["name"], "metrics");
    assert_eq!(c["ports"][0]["containerPort"], 9464);
    let svc = value("service.yaml");
    assert_eq!(svc["spec"]["ports"][0]["name"], "metrics");
    assert_eq!(svc["spec"]["ports"][0]["port"], 9464);
    let sm = value("servicemonitor.yaml");
    assert_eq!(sm["metadata"]["labels"]["release"], "kube-prometheus-stack");
    assert_eq!(sm["spec"]["endpoints"][0]["port"], "metrics");
    assert_eq!(sm["spec"]["endpoints"][0]["honorLabels"], true);
    let labels = &svc["metadata"]["labels"];
    for (k, v) in sm["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(
            &labels[k], v,
            "the ServiceMonitor selects the Service by {k}"
        );
    }
    let uid = pod["securityContext"]["runAsUser"].as_u64().unwrap();
    let containerfile = read("Containerfile");
    let stages = containerfile
        .lines()
        .filter(|l| l.starts_with("FROM "))
        .count();
    assert_eq!(stages, 2, "multi-stage: build, then runtime");
    assert!(containerfile.contains("cargo build --release --locked -p llmscope"));
    assert!(
        containerfile.contains(&format!("USER {uid}:{uid}")),
        "uid {uid}"
    );
    assert!(
        containerfile.contains(":nonroot"),
        "a nonroot runtime image"
    );
    assert!(containerfile.contains("EXPOSE 9464"));
}

/// The Deployment's arguments are ones the binary accepts: run as they are (the Prometheus
/// pointed at a closed loopback port, `--once` so it evaluates once), watch gets past parsing
/// and fails on the connection — not on a flag the manifest misspells or the CLI renamed.
#[test]
fn the_deployment_args_are_accepted_by_llmscope_watch() {
    let dep: serde_json::Value = serde_saphyr::from_str(&read("deployment.yaml")).unwrap();
    let args: Vec<String> = dep["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .map(|a| match a.strip_prefix("--prometheus=") {
            Some(_) => format!(
                "--prometheus=http://127.0.0.1:{}",
                crate::common::closed_port()
            ),
            None => a,
        })
        .map(|a| match a.strip_prefix("--listen=") {
            Some(_) => "--listen=127.0.0.1:0".to_owned(),
            None => a,
        })
        .collect();
    let mut argv: Vec<&str> = args.iter().map(String::as_str).collect();
    argv.push("--once");
    let out = crate::common::llmscope(&argv);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot connect"),
        "fails on the connection, not the flags:\n{err}"
    );
}

/// `load-job.yaml`'s documents: the volume claim, the shards' Job, the merge Job.
fn load_job() -> Vec<serde_json::Value> {
    read("load-job.yaml")
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str(doc).unwrap())
        .collect()
}

fn container_args(job: &serde_json::Value) -> Vec<String> {
    job["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

/// The sharded load's Job (issue 29) validates strictly; a misspelt field in it is caught.
#[test]
fn the_load_job_validates_strictly_against_kubernetes() {
    let Some(python) = validator() else { return };
    let (ok, report) = validate_with(&python, &[], &[deploy("load-job.yaml")]);
    assert!(ok, "{report}");
    for kind in [
        "PersistentVolumeClaim/llmscope-load-out (against Kubernetes",
        "Job/llmscope-load (against Kubernetes",
        "Job/llmscope-load-merge (against Kubernetes",
    ] {
        assert!(report.contains(kind), "{kind} not validated:\n{report}");
    }
    let bad = temp_dir("load-job-validate").join("load-job.yaml");
    std::fs::write(
        &bad,
        read("load-job.yaml").replacen("completionMode:", "completionMod:", 1),
    )
    .unwrap();
    let (ok, report) = validate_with(&python, &[], &[bad]);
    assert!(
        !ok && report.contains("'completionMod' was unexpected"),
        "{report}"
    );
}

/// An Indexed Job of N pods runs shards 0..N-1 of N, all held to one start time, writing to the
/// volume the merge Job reads and waits on.
#[test]
fn the_load_job_shards_agree_with_its_completions_and_the_merge_reads_their_volume() {
    let docs = load_job();
    let (pvc, shards, merge) = (&docs[0], &docs[1], &docs[2]);
    assert_eq!(pvc["kind"], "PersistentVolumeClaim");
    assert_eq!(shards["spec"]["completionMode"], "Indexed");
    let n = shards["spec"]["completions"].as_u64().unwrap();
    assert_eq!(shards["spec"]["parallelism"].as_u64(), Some(n));
    let args = container_args(shards);
    assert!(
        args.contains(&format!("--shard=$(JOB_COMPLETION_INDEX)/{n}")),
        "{args:?}"
    );
    assert!(
        args.contains(&"--start-at=$(START_AT)".to_owned()),
        "{args:?}"
    );
    let env = &shards["spec"]["template"]["spec"]["containers"][0]["env"][0];
    assert_eq!(env["name"], "START_AT");
    // The placeholder the README's `sed` replaces.
    assert_eq!(env["value"], "2000-01-01T00:00:00Z");
    let mount = |job: &serde_json::Value| {
        let pod = &job["spec"]["template"]["spec"];
        (
            pod["containers"][0]["volumeMounts"][0]["mountPath"].clone(),
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"].clone(),
        )
    };
    assert_eq!(mount(shards), mount(merge));
    assert_eq!(mount(shards).1, pvc["metadata"]["name"]);
    assert!(args.contains(&"--out=/out".to_owned()), "{args:?}");
    let margs = container_args(merge);
    assert_eq!(&margs[..2], ["merge", "/out"]);
    assert!(margs.iter().any(|a| a.starts_with("--wait=")), "{margs:?}");
}

/// The Jobs' arguments are ones the binary takes, as Kubernetes expands them: the shard with
/// index one gets past parsing and fails on the connection; the placeholder start time left in
/// is refused by name; the merge fails on the empty volume, not on a flag.
#[test]
fn the_load_job_args_are_accepted_by_llmscope() {
    let docs = load_job();
    let dir = temp_dir("load-job-args");
    let out = dir.to_str().unwrap().to_owned();
    let port = crate::common::closed_port();
    let expand = |args: Vec<String>, start: &str| -> Vec<String> {
        args.into_iter()
            .map(|a| {
                a.replace("$(JOB_COMPLETION_INDEX)", "1")
                    .replace("$(START_AT)", start)
                    .replace(
                        "http://vllm.llm.svc:8000",
                        &format!("http://127.0.0.1:{port}"),
                    )
                    .replace("/out", &out)
                    .replace("--wait=2h", "--wait=0s")
            })
            .collect()
    };
    let run = |args: &[String]| {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = crate::common::llmscope(&argv);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let soon = format!("{:.3}", crate::common::unix_now() + 1.0);
    let (code, err) = run(&expand(container_args(&docs[1]), &soon));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("cannot reach"),
        "fails on the connection:\n{err}"
    );
    let (code, err) = run(&expand(container_args(&docs[1]), "2000-01-01T00:00:00Z"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("more than a day ago"), "{err}");
    let (code, err) = run(&expand(container_args(&docs[2]), &soon));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no shard files found"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

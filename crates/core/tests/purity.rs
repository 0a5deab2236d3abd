//! The pure crates stay pure: no async runtime, HTTP stack or database in the dependency tree of
//! the core, the metric catalog or the diagnosis.

#[test]
fn core_depends_on_no_io_crates() {
    for package in ["llmscope-core", "llmscope-catalog", "llmscope-diagnosis"] {
        depends_on_no_io_crates(package);
    }
}

fn depends_on_no_io_crates(package: &str) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = std::process::Command::new(cargo)
        .args([
            "tree",
            "-p",
            package,
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.contains(package), "{tree}");
    for banned in ["tokio", "hyper", "reqwest", "rusqlite", "axum"] {
        assert!(
            !tree.lines().any(|l| l.starts_with(&format!("{banned} "))),
            "{package} depends on {banned}:\n{tree}"
        );
    }
}

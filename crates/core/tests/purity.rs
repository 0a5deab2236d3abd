//! The core stays pure: no async runtime, HTTP stack or database in its dependency tree.

#[test]
fn core_depends_on_no_io_crates() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = std::process::Command::new(cargo)
        .args([
            "tree",
            "-p",
            "llmscope-core",
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
    assert!(tree.contains("llmscope-core"), "{tree}");
    for banned in ["tokio", "hyper", "reqwest", "rusqlite", "axum"] {
        assert!(
            !tree.lines().any(|l| l.starts_with(&format!("{banned} "))),
            "core depends on {banned}:\n{tree}"
        );
    }
}

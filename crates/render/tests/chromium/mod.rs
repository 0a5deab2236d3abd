//! Headless Chromium for the HTML reports' tests: find it (in CI its absence fails), build a
//! page's DOM, take a screenshot, and check what every page must hold ([`rendered`]). Shared by
//! this crate's tests and by `llmscope-watch`'s status-page test (through `#[path]`, so the
//! helpers exist once).

pub fn which(bin: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(bin))
            .find(|p| p.is_file())
    })
}

/// Chromium on PATH; in CI (`CI=true`) its absence fails the test, elsewhere the test is skipped.
pub fn chromium() -> Option<std::path::PathBuf> {
    let found = ["chromium", "chromium-browser"]
        .iter()
        .find_map(|b| which(b));
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium is required in CI (apt-get install -y chromium)"
        );
        eprintln!("skipped: no chromium on PATH (apt-get install -y chromium)");
    }
    found
}

/// Chromium, headless, on `page` with `extra` arguments; its stdout.
pub fn headless(
    chromium: &std::path::Path,
    dir: &std::path::Path,
    page: &std::path::Path,
    extra: &[String],
) -> String {
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            &format!("--user-data-dir={}", dir.join("profile").display()),
        ])
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stderr(std::process::Stdio::null())
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium exited with {}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub const HOSTILE: &str = "<script>alert(1)</script>";

/// Every `<svg>` of `dom` and what lies inside it.
pub fn svgs(dom: &str) -> Vec<&str> {
    dom.split("<svg")
        .skip(1)
        .map(|rest| &rest[..rest.find("</svg>").unwrap()])
        .collect()
}

/// Whether `svg` holds a data line: a path with a coordinate, or a polyline through two points.
pub fn has_data_path(svg: &str) -> bool {
    let attr = |rest: &str, name: &str| -> String {
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        let value = tag.split(&format!(" {name}=\"")).nth(1);
        value
            .and_then(|d| d.split('"').next())
            .unwrap_or("")
            .to_owned()
    };
    svg.split("class=\"series\"").skip(1).any(|rest| {
        let d = attr(rest, "d");
        let path = d.starts_with('M') && d.contains(',') && d.chars().any(|c| c.is_ascii_digit());
        path || attr(rest, "points")
            .split(' ')
            .filter(|p| p.contains(','))
            .count()
            >= 2
    })
}

/// A screenshot of the page's first screen is made and is not blank.
pub fn screenshot(chromium: &std::path::Path, dir: &std::path::Path, page: &std::path::Path) {
    let shot = dir.join("first-screen.png");
    let args = [
        "--window-size=1200,1000".to_owned(),
        format!("--screenshot={}", shot.display()),
    ];
    headless(chromium, dir, page, &args);
    let png = std::fs::read(&shot).expect("a screenshot was written");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert!(png.len() > 20_000, "blank page? {} bytes", png.len());
    if let Ok(keep) = std::env::var("LLMSCOPE_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, format!("{keep}.first-screen.png")).unwrap();
    }
}

/// Writes `html` as `name` in a fresh directory, has Chromium build its DOM, and checks what every
/// report kind must hold: under 2 MiB, at least `min_charts` charts each with data, the hostile
/// label escaped and no script, nothing fetched from off the page. The DOM, and the directory.
pub fn rendered(
    name: &str,
    html: &[u8],
    min_charts: usize,
) -> Option<(String, std::path::PathBuf)> {
    let chromium = chromium()?;
    let dir = std::env::temp_dir().join(format!("llmscope-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    eprintln!("{name}: the page is {} bytes", html.len());
    assert!(html.len() < 2 * 1024 * 1024, "{name}: {} bytes", html.len());
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    let dom = headless(&chromium, &dir, &page, &["--dump-dom".to_owned()]);
    let charts = svgs(&dom);
    assert!(
        charts.len() >= min_charts,
        "{name}: {} charts",
        charts.len()
    );
    for (n, svg) in charts.iter().enumerate() {
        assert!(has_data_path(svg), "{name}: chart {n} has no data: {svg}");
    }
    assert!(
        !dom.contains("<script"),
        "{name}: a script or unescaped label"
    );
    assert!(
        dom.contains(&esc_hostile()),
        "{name}: the hostile label escaped"
    );
    for attr in ["src=", "href=", "url(", "@import"] {
        assert!(!dom.contains(attr), "{name}: {attr} would leave the page");
    }
    screenshot(&chromium, &dir, &page);
    Some((dom, dir))
}

pub fn esc_hostile() -> String {
    "&lt;script&gt;alert(1)&lt;/script&gt;".to_owned()
}

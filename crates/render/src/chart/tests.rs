use super::*;

fn time() -> TimeAxis {
    TimeAxis::over([0.0, 100.0]).unwrap()
}

fn svg(p: &Panel) -> String {
    let mut s = String::new();
    p.write(&mut s);
    s
}

/// The `d` of every data path.
fn paths(s: &str) -> Vec<&str> {
    s.split("<path class=\"series\" d=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect()
}

fn steady(from: u32, to: u32, v: f64) -> Vec<(f64, f64)> {
    (from..to).map(|t| (f64::from(t), v)).collect()
}

#[test]
fn a_value_sits_at_its_height_on_its_own_axis() {
    let mut p = Panel::new("t", time(), 100.0, Axis::new("req"));
    p.right = Some(Axis::percent());
    p.line("running", Side::Left, steady(0, 100, 16.0));
    p.line("gpu", Side::Right, steady(0, 100, 50.0));
    let s = svg(&p);
    let d = paths(&s);
    // Left axis 0..20: 16 is 80 % up; right axis 0..100 %: 50 is half way.
    assert!(
        d[0].starts_with(&format!("M{LEFT:.1},{:.1}", TOP + 20.0)),
        "{}",
        d[0]
    );
    assert!(
        d[1].starts_with(&format!("M{LEFT:.1},{:.1}", TOP + 50.0)),
        "{}",
        d[1]
    );
    assert!(
        s.contains(">20 req<") && s.contains(">100%<"),
        "units on the axes"
    );
}

#[test]
fn a_hole_in_the_samples_is_a_gap_labelled_no_data_not_a_zero() {
    let mut points = steady(0, 20, 8.0);
    points.extend(steady(60, 100, 8.0));
    let mut p = Panel::new("t", time(), 100.0, Axis::new(""));
    p.line("waiting", Side::Left, points);
    let s = svg(&p);
    let d = paths(&s)[0];
    assert_eq!(d.matches('M').count(), 2, "two runs: {d}");
    let floor = format!(",{:.1}", TOP + 100.0);
    assert!(!d.contains(&floor), "nothing drawn at 0: {d}");
    assert!(
        s.contains("class=\"gap\"") && s.contains(">no data<"),
        "{s}"
    );
}

#[test]
fn a_nan_sample_breaks_the_line_too() {
    let mut points = steady(0, 50, 1.0);
    points.push((50.0, f64::NAN));
    points.extend(steady(51, 100, 1.0));
    let (runs, holes) = series::split(&points);
    assert_eq!(runs.len(), 2);
    assert_eq!(holes, vec![(49.0, 51.0)]);
}

#[test]
fn a_slower_source_is_not_full_of_holes() {
    // dcgm every 30 s: its usual step is 30 s, so 30 s apart is joined.
    let points: Vec<(f64, f64)> = (0..4).map(|i| (f64::from(i) * 30.0, 40.0)).collect();
    assert_eq!(series::split(&points).0.len(), 1);
}

#[test]
fn an_absent_line_is_named_no_data_and_an_empty_panel_is_a_sentence() {
    let mut p = Panel::new("KV", time(), 100.0, Axis::percent());
    p.line("kv", Side::Left, steady(0, 100, 2.0));
    p.line("preemptions", Side::Left, Vec::new());
    assert!(svg(&p).contains("preemptions: no data"));
    let mut empty = Panel::new("TTFT p95", time(), 100.0, Axis::new("ms"));
    empty.line("ttft", Side::Left, vec![(1.0, f64::NAN)]);
    empty.missing = "the engine's TTFT histogram".into();
    let s = svg(&empty);
    assert!(
        !s.contains("<svg") && !s.contains("<path"),
        "no empty axes: {s}"
    );
    assert!(
        s.contains("no data: the engine&#39;s TTFT histogram"),
        "{s}"
    );
}

#[test]
fn every_text_is_escaped() {
    let hostile = "<script>alert(1)</script>\"'&";
    let mut p = Panel::new(hostile, time(), 100.0, Axis::new(hostile));
    p.line(hostile, Side::Left, steady(0, 100, 1.0));
    p.rules.push(Rule {
        label: hostile.into(),
        value: 1.0,
        side: Side::Left,
        colour: "#000",
    });
    p.marks.push(Mark {
        t: 50.0,
        label: hostile.into(),
        colour: "#000",
    });
    p.dots.push(Dot {
        t: 50.0,
        value: 1.0,
        side: Side::Left,
        label: hostile.into(),
        colour: "#000",
    });
    p.bands.push(Band {
        from: 0.0,
        to: 10.0,
        label: hostile.into(),
        fill: "#eee",
    });
    let s = svg(&p);
    assert!(!s.contains("<script") && !s.contains("\"'&"), "{s}");
    assert!(s.matches("&lt;script&gt;").count() >= 8, "{s}");
    let mut c = String::new();
    Cdf {
        title: hostile.into(),
        unit: hostile.into(),
        curves: vec![Curve {
            label: hostile.into(),
            points: vec![(1.0, 0.5)],
        }],
        missing: String::new(),
    }
    .write(&mut c);
    assert!(
        !c.contains("<script") && c.contains("&lt;script&gt;"),
        "{c}"
    );
}

#[test]
fn the_same_data_gives_the_same_bytes() {
    let build = || {
        let mut p = Panel::new("t", time(), 100.0, Axis::new(""));
        p.line("a", Side::Left, steady(0, 100, 3.0));
        svg(&p)
    };
    assert_eq!(build(), build());
}

#[test]
fn a_day_of_one_second_samples_stays_small() {
    let day = TimeAxis::over([0.0, 86_400.0]).unwrap();
    let points: Vec<(f64, f64)> = (0..86_400)
        .map(|t| (f64::from(t), f64::from(t % 17)))
        .collect();
    let mut p = Panel::new("t", day, 100.0, Axis::new(""));
    p.line("a", Side::Left, points);
    let s = svg(&p);
    assert!(s.len() < 40_000, "{} bytes", s.len());
    let d = paths(&s)[0];
    assert!(
        d.contains(&format!(",{:.1}", TOP + 100.0)),
        "the envelope keeps the lows"
    );
}

#[test]
fn a_cdf_ticks_each_decade_and_leaves_out_what_a_log_axis_cannot_show() {
    let cdf = |points: Vec<(f64, f64)>| {
        let mut s = String::new();
        Cdf {
            title: "TTFT".into(),
            unit: "ms".into(),
            curves: vec![Curve {
                label: "ttft".into(),
                points,
            }],
            missing: "no latencies".into(),
        }
        .write(&mut s);
        s
    };
    let s = cdf(vec![(0.0, 0.0), (3.0, 0.5), (40.0, 0.9), (4000.0, 1.0)]);
    for tick in [">1 ms<", ">10 ms<", ">100 ms<", ">1000 ms<", ">10000 ms<"] {
        assert!(s.contains(tick), "{tick}: {s}");
    }
    assert_eq!(paths(&s)[0].matches('L').count(), 2, "0 ms is left out");
    let none = cdf(vec![(0.0, 0.5)]);
    assert!(!none.contains("<svg") && none.contains("no data: no latencies"));
}

#[test]
fn a_sparkline_shows_holes_as_spaces_and_zeros_as_the_lowest_block() {
    let mut points = steady(0, 40, 0.0);
    points.extend(steady(70, 100, 10.0));
    let line = sparkline(&points, time(), 10);
    assert_eq!(line, "▁▁▁▁   ███");
    let late = sparkline(&steady(50, 100, 2.0), time(), 10);
    assert_eq!(late, "     █████", "before the first sample is no data");
    assert_eq!(sparkline(&[], time(), 4), "    ");
}

/// Evidence labels at nearly the same place ("plateau 16 req", "mean 15.8 req") are moved apart;
/// one far away keeps its place above its dot.
#[test]
fn evidence_labels_that_would_collide_are_moved_apart() {
    let ys = super::series::label_ys(&[(500.0, 40.0, 14), (500.0, 41.0, 13), (900.0, 41.0, 9)]);
    assert_eq!(ys[0], 33.0);
    assert!((ys[1] - ys[0]).abs() >= 13.0, "{ys:?}");
    assert_eq!(ys[2], 34.0, "no collision, no move");
}

//! The step model fitted to a real vLLM 0.32 (the real regime matrix's captures,
//! `crates/diagnosis/tests/fixtures/real-matrix`: the engine's own counters every 0.5 s) at
//! `--max-num-seqs 8`, asked what `--max-num-seqs 16` serves, and held against what the same
//! matrix run then measured on a server started at 16 — the engine's own token counter over the
//! oracle's window, never llmscope's figures.
//!
//! Each matrix run (the file suffix: `""`, `-r1`, `-r2`, `-r5`, on different days and host
//! states) is fitted and judged on its own: a host's state moves the real engine's speed by 5×
//! between runs (1,463 vs 340 output tok/s for the same cell), and nothing fitted on one day
//! predicts another's. Within a run a pair is held to the 20 % target only where the engine
//! paced both loads (the API server held few requests) and the target's own steps at the
//! batches fitted ran at the fitted speed (±15 %): on 2 cores shared by engine, API server and
//! client, the rest measure the host, and the table printed says which and why.

use llmscope_sim::fit::{self, Arrivals, Deployment, Interval, StepModel, Workload};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One capture: its name's cell and the scrapes' columns.
struct Capture {
    name: String,
    cap: u32,
    clients: u32,
    answers: u32,
    expect: String,
    /// The oracle's output tok/s over its window, and requests held in front of the engine.
    out_tok_s: f64,
    outside: f64,
    rows: Vec<BTreeMap<String, f64>>,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../diagnosis/tests/fixtures/real-matrix")
}

/// `c8-cap8-16c-128t-r2.tsv` → (run "-r2", cap 8, 16 clients, 128-token answers); extra flags
/// in the name are other cells (a prompt size, a shared prefix): left out.
fn cell(name: &str) -> Option<(String, u32, u32, u32)> {
    let stem = name.strip_suffix(".tsv")?;
    let (stem, run) = match stem.rsplit_once("-r") {
        Some((s, r)) if r.chars().all(|c| c.is_ascii_digit()) => (s, format!("-r{r}")),
        _ => (stem, String::new()),
    };
    let mut parts = stem.split('-');
    let _server = parts.next()?;
    let cap = parts.next()?.strip_prefix("cap")?.parse().ok()?;
    let clients = parts.next()?.strip_suffix('c')?.parse().ok()?;
    let answers = parts.next()?.strip_suffix('t')?.parse().ok()?;
    parts
        .next()
        .is_none()
        .then_some((run, cap, clients, answers))
}

fn number_after(line: &str, key: &str) -> Option<f64> {
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

fn read(path: &Path) -> Option<(String, Capture)> {
    let name = path.file_name()?.to_str()?.to_owned();
    let (run, cap, clients, answers) = cell(&name)?;
    if !name.starts_with(&format!("c{cap}-")) {
        return None; // the servers of other flags (tb128, kv4m)
    }
    let text = std::fs::read_to_string(path).ok()?;
    Some((run, parse(name, &text, (cap, clients, answers))?))
}

/// A capture's text (the real tier's fixture format) as the cell `(cap, clients, answers)`.
fn parse(name: String, text: &str, (cap, clients, answers): (u32, u32, u32)) -> Option<Capture> {
    let oracle = text.lines().find_map(|l| l.strip_prefix("# oracle:"))?;
    let expect = text
        .lines()
        .find_map(|l| l.strip_prefix("# expect:"))?
        .trim();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next()?.split('\t').collect();
    let rows = lines
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t'))
                .filter_map(|(h, v)| Some(((*h).to_owned(), v.parse().ok()?)))
                .collect()
        })
        .collect();
    Some(Capture {
        name,
        cap,
        clients,
        answers,
        expect: expect.to_owned(),
        out_tok_s: number_after(oracle, " out ")?,
        outside: number_after(oracle, "outside ")?,
        rows,
    })
}

const STEPS: &str = "vllm:iteration_tokens_total_count";
const GENERATED: &str = "vllm:generation_tokens_total";
const PROMPT: &str = "vllm:prompt_tokens_total";
const DONE: &str = "vllm:request_success_total";
const PREEMPTED: &str = "vllm:num_preemptions_total";

/// The intervals between scrapes in which the engine stepped, between two intervals in which it
/// stepped too (so it was working throughout, not starting or stopping).
fn intervals(c: &Capture) -> Vec<Interval> {
    let prompt_mean = prompt_tokens(c).unwrap_or(0.0);
    let v = |i: usize, k: &str| c.rows[i].get(k).copied();
    let delta = |i: usize, k: &str| Some(v(i + 1, k)? - v(i, k)?);
    let stepped = |i: usize| delta(i, STEPS).is_some_and(|d| d > 0.0);
    (1..c.rows.len().saturating_sub(2))
        .filter(|&i| stepped(i - 1) && stepped(i) && stepped(i + 1))
        .filter_map(|i| {
            Some(Interval {
                seconds: delta(i, "t")?,
                steps: delta(i, STEPS)?,
                generated: delta(i, GENERATED)?,
                prompt: delta(i, PROMPT).unwrap_or(0.0),
                recomputed: delta(i, PREEMPTED).unwrap_or(0.0) * prompt_mean,
            })
        })
        .collect()
}

/// Mean prompt tokens of the requests a capture saw finish.
fn prompt_tokens(c: &Capture) -> Option<f64> {
    let (first, last) = (c.rows.first()?, c.rows.last()?);
    let done = last.get(DONE)? - first.get(DONE)?;
    let prompt = last.get(PROMPT)? - first.get(PROMPT)?;
    (done > 0.0).then_some(prompt / done)
}

/// Seconds each request spent outside the engine (Little: the requests the engine never saw
/// over the requests finished per second).
fn frontend_s(c: &Capture) -> f64 {
    let iv = intervals(c);
    let seconds: f64 = iv.iter().map(|i| i.seconds).sum();
    let requests: f64 = iv.iter().map(|i| i.generated).sum::<f64>() / f64::from(c.answers);
    if seconds <= 0.0 || requests <= 0.0 {
        return 0.0;
    }
    // As `whatif` reads it: under a request or a twentieth of the clients is noise.
    if c.outside < (0.05 * f64::from(c.clients)).max(1.0) {
        return 0.0;
    }
    c.outside / (requests / seconds)
}

/// What the engine at `c`'s cap serves `c`'s load, with `base`'s time outside the engine (the
/// same load measured at the old cap: what `whatif BASE --set max-num-seqs=16` replays).
/// Steps of the same batches this far slower or faster than when the model was fitted: the
/// host is not the one the model was fitted on.
const HOST_DRIFT: f64 = 0.15;

/// How much longer (+) or shorter (−) the capture's own steps at the batches the model was
/// fitted on took than the model says; `None` where it ran none of those batches.
fn drift(model: &StepModel, c: &Capture) -> Option<f64> {
    let within: Vec<Interval> = intervals(c)
        .into_iter()
        .filter(|i| i.generated / i.steps <= model.batch_range.1 + 0.5)
        .collect();
    let took: f64 = within.iter().map(|i| i.seconds).sum();
    let said: f64 = within
        .iter()
        .map(|i| {
            model.step_s * i.steps
                + model.seq_s * i.generated
                + model.prompt_token_s * (i.prompt + i.recomputed)
        })
        .sum();
    (took > 0.0 && said > 0.0).then(|| took / said - 1.0)
}

fn predict(model: &StepModel, c: &Capture, base: &Capture) -> f64 {
    let d = Deployment {
        max_num_seqs: c.cap,
        max_num_batched_tokens: 2048,
        kv_tokens: None,
        block_size: 128,
        replicas: 1,
    };
    let w = Workload {
        arrivals: Arrivals::Closed {
            concurrency: c.clients,
        },
        prompt_tokens: prompt_tokens(base).unwrap_or(30.0).round() as u32,
        output_tokens: c.answers,
        frontend_s: frontend_s(base),
        frontend_before_s: None,
        frontend_tok_s: None,
    };
    fit::replay(model, &d, &w, 5.0, 30.0).output_tok_s
}

/// The prompt token's cost over the whole real matrix: every server (caps 2–32) on every day
/// (four host states), fitted on one workload (one answer length: prompt and generated tokens
/// move together) and on two (32- and 128-token answers to the same prompts). The oracle is the
/// two-workload fit, where the ratio of prompt to generated tokens moves: it must tell the cost
/// from 0 in every cell, and the range a one-workload fit allows (two standard errors) must
/// hold that cost in at least nine cells of ten (two standard errors leave one in twenty out).
#[test]
#[allow(clippy::print_stderr)] // every cell's ranges
fn one_workload_s_prompt_cost_range_holds_what_two_workloads_tell() {
    let mut runs: BTreeMap<String, Vec<Capture>> = BTreeMap::new();
    for p in std::fs::read_dir(dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
    {
        if let Some((run, c)) = read(&p) {
            runs.entry(run).or_default().push(c);
        }
    }
    let (mut cells, mut held, mut told) = (0, 0, 0);
    let mut both_fitted = 0;
    for (run, caps) in &runs {
        for cap in [2, 4, 8, 16, 32] {
            let of = |answers: Option<u32>| {
                let iv: Vec<Interval> = caps
                    .iter()
                    .filter(|c| c.cap == cap && answers.is_none_or(|a| c.answers == a))
                    .flat_map(intervals)
                    .collect();
                fit::fit(&iv).ok()
            };
            let Some(both) = of(None) else {
                continue;
            };
            both_fitted += 1;
            let (lo, _) = both.prompt_token_range.expect("a range");
            if lo > 0.0 {
                told += 1;
            }
            let cost = both.prompt_token_s;
            for answers in [32, 128] {
                let Some(one) = of(Some(answers)) else {
                    continue;
                };
                let (a, b) = one.prompt_token_range.expect("a range");
                cells += 1;
                let inside = a <= cost && cost <= b;
                held += usize::from(inside);
                eprintln!(
                    "run{run} cap {cap}, {answers}-token answers: {:.4}–{:.4} ms a prompt token; both answer lengths: {:.4}{}",
                    a * 1e3,
                    b * 1e3,
                    cost * 1e3,
                    if inside { "" } else { " (outside)" }
                );
            }
        }
    }
    assert!(both_fitted >= 16, "only {both_fitted} servers fitted");
    assert_eq!(told, both_fitted, "two workloads left the cost unknown");
    assert!(
        cells >= 30 && held * 10 >= cells * 9,
        "{held} of {cells} one-workload ranges hold the cost"
    );
}

#[test]
#[allow(clippy::print_stderr)] // the table of every pair, judged or not, and why
fn a_fit_at_cap_8_predicts_what_the_engine_served_at_cap_16() {
    let mut runs: BTreeMap<String, Vec<Capture>> = BTreeMap::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for (run, c) in files.iter().filter_map(|p| read(p)) {
        runs.entry(run).or_default().push(c);
    }
    let mut judged = 0;
    let mut wrong = Vec::new();
    for (run, caps) in &runs {
        let at8: Vec<Interval> = caps
            .iter()
            .filter(|c| c.cap == 8)
            .flat_map(intervals)
            .collect();
        let Ok(model) = fit::fit(&at8) else {
            continue;
        };
        eprintln!(
            "run{run}: step {:.2} ms + {:.3} ms/seq + {:.4} ms/prompt token ({} intervals, batch {:.1}–{:.1}, residual {:.0}%)",
            model.step_s * 1e3,
            model.seq_s * 1e3,
            model.prompt_token_s * 1e3,
            model.intervals,
            model.batch_range.0,
            model.batch_range.1,
            model.residual * 100.0
        );
        for c in caps.iter().filter(|c| c.cap == 16) {
            let same =
                |b: &&Capture| b.cap == 8 && b.clients == c.clients && b.answers == c.answers;
            let Some(base) = caps.iter().find(same) else {
                continue;
            };
            let predicted = predict(&model, c, base);
            let err = predicted / c.out_tok_s - 1.0;
            // Held to the target where the engine, not its API server, set the pace at both
            // loads (the oracle read the batch cap or load not reached, with few requests in
            // front of it), and where the host ran the engine's steps as fast as when it was
            // fitted: the target's own steps at the batches fitted, against the model.
            let paced = |c: &Capture| {
                matches!(c.expect.as_str(), "batch_limit" | "load_not_reached")
                    && c.outside <= 0.15 * f64::from(c.clients)
            };
            let drift = drift(&model, c);
            let why_not = if !paced(c) || !paced(base) {
                " (the API server set the pace: not held to the target)"
            } else if drift.is_none_or(|d| d.abs() > HOST_DRIFT) {
                " (the host ran the engine's steps at another speed: not held to the target)"
            } else {
                ""
            };
            eprintln!(
                "  {}: predicted {predicted:.0} tok/s, the engine served {:.0} ({:+.0}%); oracle {} with {:.1} in front of it; its steps {} the fit{why_not}",
                c.name,
                c.out_tok_s,
                err * 100.0,
                c.expect,
                c.outside,
                drift.map_or("—".to_owned(), |d| format!("{:+.0}% on", d * 100.0)),
            );
            if why_not.is_empty() {
                judged += 1;
                if err.abs() > 0.2 {
                    wrong.push(format!("{}: {:+.0}%", c.name, err * 100.0));
                }
            }
        }
    }
    // Of the 24 cap-16 captures, two (run -r5, 8 clients) had the engine pacing both loads on
    // an unchanged host: the API server or the host's own speed moved every other pair.
    assert!(
        judged >= 2,
        "only {judged} engine-paced cap-16 captures on an unchanged host to judge"
    );
    assert!(wrong.is_empty(), "predicted outside 20 %: {wrong:?}");
}

/// The real tier's `whatif KV 4 → 8 MiB` as captured (`crates/sim/tests/fixtures/real-whatif-kv`,
/// one folder a day's run): the fit's runs on a real vLLM 0.32 at `--max-num-seqs 16` with a
/// 4 MiB pool (2,048 tokens, 16 blocks of 128, `vllm:cache_config_info`) — 32 clients twice,
/// 4 clients once, 93-token prompts, 64-token answers — and the same load on the server then
/// started with 8 MiB (4,096 tokens). 32 clients on the 4 MiB pool preempt about once every
/// eight steps, and each preempted request computes its prompt again where no counter counts
/// it.
fn kv_sets() -> Vec<(String, [Capture; 4])> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real-whatif-kv");
    let mut sets: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    sets.iter()
        .map(|dir| {
            let capture = |file: &str, clients: u32| {
                let text = std::fs::read_to_string(dir.join(file)).unwrap();
                parse(file.to_owned(), &text, (16, clients, 64))
                    .unwrap_or_else(|| panic!("{}/{file} is not a capture", dir.display()))
            };
            (
                dir.file_name().unwrap().to_string_lossy().into_owned(),
                [
                    capture("base.tsv", 32),
                    capture("base-again.tsv", 32),
                    capture("light.tsv", 4),
                    capture("target-8mib.tsv", 32),
                ],
            )
        })
        .collect()
}

/// What the 4 MiB runs' fit predicts the 8 MiB server serves (output tok/s), at the prompt
/// cost it takes and at each edge of the range the runs allow.
fn kv_prediction(fitted: &[Interval], base: &Capture) -> Option<[f64; 3]> {
    kv_replay(fitted, base, |model, d, w| {
        let (lo, hi) = model
            .prompt_token_range
            .unwrap_or((model.prompt_token_s, model.prompt_token_s));
        let at = |m: &StepModel| fit::replay(m, d, w, 5.0, 30.0).output_tok_s;
        [
            at(model),
            at(&fit::refit_at(fitted, model, lo)),
            at(&fit::refit_at(fitted, model, hi)),
        ]
    })
}

/// The intervals a KV set's fit is made on: its base, the base repeated and its light run.
fn kv_fitted([base, again, light, _]: &[Capture; 4]) -> Vec<Interval> {
    [base, again, light]
        .into_iter()
        .flat_map(intervals)
        .collect()
}

/// `then` on the model fitted to `fitted`, the 8 MiB deployment and the base's load.
fn kv_replay<T>(
    fitted: &[Interval],
    base: &Capture,
    then: impl FnOnce(&StepModel, &Deployment, &Workload) -> T,
) -> Option<T> {
    let model = fit::fit(fitted).ok()?;
    let d = Deployment {
        max_num_seqs: 16,
        max_num_batched_tokens: 2048,
        kv_tokens: Some(4096),
        block_size: 128,
        replicas: 1,
    };
    let w = Workload {
        arrivals: Arrivals::Closed { concurrency: 32 },
        prompt_tokens: prompt_tokens(base)?.round() as u32,
        output_tokens: 64,
        frontend_s: frontend_s(base),
        frontend_before_s: None,
        frontend_tok_s: None,
    };
    Some(then(&model, &d, &w))
}

/// Fitted on the 4 MiB runs, the model says what the 8 MiB server serves, judged against the
/// engine's own generation counter on that server. The oracle: each capture's `out` (its
/// tokens over the loaded window, from its `/metrics`). Fitted blind to what preemptions
/// recompute, the starved batch's time goes to each sequence, and no prompt cost the runs
/// allow reaches what the bigger pool served.
#[test]
#[allow(clippy::print_stderr)] // each day's figures
fn a_fit_on_a_preempting_pool_predicts_the_pool_that_ends_it() {
    let sets = kv_sets();
    assert!(!sets.is_empty(), "no capture sets");
    let (mut blind_missed, mut outside) = (0, Vec::new());
    for (name, set) in &sets {
        let [base, .., target] = set;
        let fitted = kv_fitted(set);
        let blind: Vec<Interval> = fitted
            .iter()
            .map(|i| Interval {
                recomputed: 0.0,
                ..*i
            })
            .collect();
        let p = kv_prediction(&fitted, base).expect("a fit");
        let b = kv_prediction(&blind, base).expect("a fit");
        let measured = target.out_tok_s;
        let band = |x: &[f64; 3]| {
            let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = x.iter().copied().fold(0.0, f64::max);
            (lo, hi)
        };
        let (lo, hi) = band(&p);
        let (blo, bhi) = band(&b);
        eprintln!(
            "{name}: the 8 MiB server served {measured:.0} tok/s; predicted {:.0} ({:+.0}%), the prompt cost's range {lo:.0}–{hi:.0}; blind to recomputing: {:.0}, {blo:.0}–{bhi:.0}",
            p[0],
            (p[0] / measured - 1.0) * 100.0,
            b[0],
        );
        if !(lo <= measured && measured <= hi) {
            let by = (measured / hi - 1.0).max(1.0 - measured / lo);
            outside.push((
                by,
                format!("{name}: {measured:.0} tok/s outside {lo:.0}–{hi:.0}"),
            ));
        }
        blind_missed += usize::from(measured > bhi * 1.02);
    }
    // The range holds the 8 MiB server's output in three days of four (a fresh server on
    // this host runs its steps up to ~15 % apart from the last one's: 6.3 and 7.3 ms at 16
    // sequences), and misses by no more than that spread's third.
    assert!(
        outside.len() * 4 <= sets.len() && outside.iter().all(|(by, _)| *by <= 0.05),
        "{outside:?}"
    );
    assert!(
        blind_missed * 2 >= sets.len(),
        "blind to recomputing, the fit reached what the 8 MiB pool served in {} of {} days",
        sets.len() - blind_missed,
        sets.len()
    );
}

/// The limit the 8 MiB server met, by the engine's oracle (each target's `expect`: its pool at
/// 100 % with a queue — 16 sequences of ~157 tokens need 32 blocks of 128 where vLLM's pool
/// has 31 usable, once each crosses its first block), against the fitted model's two replays:
/// with the clients in waves they cross together and meet the pool as the engine did; staggered,
/// the pool peaks below 90 % and the batch cap is named. So the model cannot pick the limit
/// from the load alone, and `whatif` names the waves' limit as near (`ops::whatif`).
#[test]
#[allow(clippy::print_stderr)] // each day's limits
fn the_pool_the_8_mib_server_met_is_met_by_the_batch_in_waves() {
    let sets = kv_sets();
    assert!(!sets.is_empty(), "no capture sets");
    for (name, set) in &sets {
        let [base, .., target] = set;
        let fitted = kv_fitted(set);
        let [staggered, waves] = kv_replay(&fitted, base, |m, d, w| {
            [false, true].map(|lockstep| fit::replay_with(m, d, w, (5.0, 30.0), lockstep))
        })
        .expect("a fit");
        eprintln!(
            "{name}: the engine's oracle {}; staggered {} (KV max {:.0} %), in waves {} (KV max {:.0} %)",
            target.expect,
            staggered.bottleneck,
            staggered.kv_max * 100.0,
            waves.bottleneck,
            waves.kv_max * 100.0
        );
        assert_eq!(target.expect, "kv_cache_capacity", "{name}");
        assert_eq!(waves.bottleneck, target.expect, "{name}: {waves:?}");
        assert_eq!(staggered.bottleneck, "batch_limit", "{name}: {staggered:?}");
        assert!(staggered.kv_max < 0.9, "{name}: {staggered:?}");
    }
}

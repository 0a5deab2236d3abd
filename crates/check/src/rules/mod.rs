//! The lint rules, one unit per rule id. Each unit is a file implementing [`Lint`]: it looks
//! at one [`Fact`] at a time — what the walk over an expression ([`crate::promql::analyze`]) or
//! a reader of files ([`crate::input`]) inferred at one place — and pushes what is wrong there
//! into [`Hits`]. Units infer nothing themselves and do not call each other (one revises what
//! others said: `fallback-changes-meaning` makes the name rules' findings on a version
//! fallback's missing arm infos).
//!
//! The folders group the units by family, for the reader: `syntax` (expressions that do not
//! parse, or are written in another dialect), `names` (metric names that are not there: one
//! verdict, [`fact::SelectorFact::absent`], said by whichever rule it names), `labels`, `rates`
//! (counters and gauges over time), `histograms`, `units`, `sums` (sums across series that are
//! no parts of a whole) and `files` (what only a whole file shows). They are no modules: the
//! registry below declares every unit as `rules::<unit>`.
//!
//! # Adding a rule
//!
//! One file and one line. The file, `rules/<family>/<rule>.rs`, holds a unit struct with
//! [`RuleInfo`] (its id, a one-line summary, and the real file the harness checks it fires on)
//! and [`Lint`] (its `check`). The line goes in the `registry!` call below, at the place where
//! its findings should come out among those of the rules that read the same facts:
//!
//! ```text
//! "histograms/avg_of_quantile.rs" => avg_of_quantile::AvgOfQuantile,
//! ```
//!
//! The registry makes the rest of it: the module, the [`Rule`] variant (named after the unit),
//! [`Rule::ALL`], [`Rule::id`] and [`Rule::summary`] (from the unit's [`RuleInfo`]), the unit's
//! [`Registered::rule`], and its place in [`ALL`], the one list every check runs.
//! `rules/harness.rs` then runs the unit through the contract every rule meets. A file in the
//! family folders that the registry does not list fails a test (it would not even be compiled),
//! and so does a unit file rustfmt would change: `cargo fmt` does not see modules declared
//! inside a macro.

pub mod fact;

#[cfg(test)]
mod harness;
#[cfg(test)]
pub(crate) mod testing;

pub use fact::{Fact, Hits, Scope};
#[cfg(test)]
pub use harness::Fixture;

use serde::{Deserialize, Serialize};

/// What a unit says of its rule: the id its findings carry, one line on what it finds, and (in
/// tests) where it fires on a real file. The registry reads it for [`Rule::id`],
/// [`Rule::summary`] and the harness.
pub trait RuleInfo {
    /// The stable id, used in output and `--fail-on`: the unit's name in kebab case
    /// (`AvgOfQuantile`: `avg-of-quantile`), which is how serde writes the [`Rule`] variant.
    const ID: &'static str;
    /// One line on what the rule finds (SARIF rule descriptions).
    const SUMMARY: &'static str;
    /// The real file it fires on, or why there is none.
    #[cfg(test)]
    const FIXTURE: Fixture;
}

/// The rule of a registered unit. The registry implements it for every unit it lists, so a
/// unit that is not registered is no [`Lint`].
pub trait Registered {
    /// The id of the findings it makes (it makes no other).
    fn rule(&self) -> Rule;
}

/// One lint rule.
pub trait Lint: Sync + Registered {
    /// Says what is wrong at `fact`, judged in `scope`, into `out`. Most facts are none of a
    /// rule's business: it returns without a word.
    fn check(&self, fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits);
}

/// Declares the units, one line each (`"folder/file.rs" => module::Unit,`), in the order their
/// findings at one place come out, and makes from them everything a rule needs besides its file.
macro_rules! registry {
    ($($path:literal => $module:ident::$unit:ident,)+) => {
        $(#[path = $path] pub mod $module;)+

        /// The rules, each with a stable id (`unknown-metric`, …) used in output and
        /// `--fail-on`: one per registered unit, named after it, in registry order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Rule {
            $($unit,)+
        }

        impl Rule {
            /// Every rule, in registry order.
            pub const ALL: [Rule; [$(Rule::$unit),+].len()] = [$(Rule::$unit),+];

            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$unit => <$module::$unit as RuleInfo>::ID,)+
                }
            }

            /// One line on what the rule finds (SARIF rule descriptions, `--help`).
            pub fn summary(self) -> &'static str {
                match self {
                    $(Rule::$unit => <$module::$unit as RuleInfo>::SUMMARY,)+
                }
            }

            /// Where the rule fires on a real file (its unit's [`RuleInfo::FIXTURE`]).
            #[cfg(test)]
            pub(crate) fn fixture(self) -> Fixture {
                match self {
                    $(Rule::$unit => <$module::$unit as RuleInfo>::FIXTURE,)+
                }
            }

            /// Its unit's file, under `src/rules/`.
            #[cfg(test)]
            pub(crate) fn file(self) -> &'static str {
                match self {
                    $(Rule::$unit => $path,)+
                }
            }
        }

        $(impl Registered for $module::$unit {
            fn rule(&self) -> Rule {
                Rule::$unit
            }
        })+

        /// Every rule, in the order their findings at one place come out.
        pub static ALL: &[&dyn Lint] = &[$(&$module::$unit),+];
    };
}

// The order their findings at one place come out (the order they had before issue 30 made them
// units: at a comparison a label is said missing before the units are said to mismatch; at the
// root a fraction titled as a percent is said before an unreachable threshold, and a summed
// fraction before a panel unit that disagrees). A new rule goes where its findings should come
// out among those of the rules that read the same facts.
registry! {
    "syntax/parse_error.rs" => parse_error::ParseError,
    "syntax/other_dialect.rs" => other_dialect::OtherDialect,
    "syntax/experimental_syntax.rs" => experimental_syntax::ExperimentalSyntax,
    "names/unknown_metric.rs" => unknown_metric::UnknownMetric,
    "names/renamed_metric.rs" => renamed_metric::RenamedMetric,
    "names/uncovered_producer.rs" => uncovered_producer::UncoveredProducer,
    "names/fallback_changes_meaning.rs" => fallback_changes_meaning::FallbackChangesMeaning,
    "labels/exporter_attribution.rs" => exporter_attribution::ExporterAttribution,
    "labels/missing_label.rs" => missing_label::MissingLabel,
    "rates/short_rate_window.rs" => short_rate_window::ShortRateWindow,
    "rates/rate_on_gauge.rs" => rate_on_gauge::RateOnGauge,
    "rates/counter_without_rate.rs" => counter_without_rate::CounterWithoutRate,
    "histograms/bad_histogram_quantile.rs" => bad_histogram_quantile::BadHistogramQuantile,
    "histograms/bucket_ratio.rs" => bucket_ratio::BucketRatio,
    "histograms/lifetime_average.rs" => lifetime_average::LifetimeAverage,
    "histograms/rate_of_sum.rs" => rate_of_sum::RateOfSum,
    "histograms/steps_as_tokens.rs" => steps_as_tokens::StepsAsTokens,
    "histograms/avg_of_quantile.rs" => avg_of_quantile::AvgOfQuantile,
    "units/fraction_as_percent.rs" => fraction_as_percent::FractionAsPercent,
    "units/unreachable_threshold.rs" => unreachable_threshold::UnreachableThreshold,
    "sums/summed_fraction.rs" => summed_fraction::SummedFraction,
    "units/unit_mismatch.rs" => unit_mismatch::UnitMismatch,
    "sums/per_process_sum.rs" => per_process_sum::PerProcessSum,
    "files/unused_variable.rs" => unused_variable::UnusedVariable,
    "files/ignored_variable.rs" => ignored_variable::IgnoredVariable,
    "files/templated_expression.rs" => templated_expression::TemplatedExpression,
    "files/nothing_checked.rs" => nothing_checked::NothingChecked,
}

/// Runs `rules`, in order, over one fact.
pub(crate) fn judge(rules: &[&dyn Lint], fact: &Fact<'_>, scope: &Scope<'_>, out: &mut Hits) {
    for r in rules {
        r.check(fact, scope, out);
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;
    use crate::promql::Context;
    use crate::rules::testing::*;
    use std::collections::BTreeSet;
    use std::path::Path;
    use std::process::Command;

    /// At one place, findings come out in [`super::ALL`]'s order: a unit registered elsewhere
    /// in the list changes the output.
    #[test]
    fn findings_at_one_place_come_out_in_the_registry_order() {
        let f = run(
            "vllm:kv_cache_usage_perc > on (tenant) DCGM_FI_DEV_GPU_UTIL",
            false,
        );
        assert_eq!(
            rules(&f),
            [Rule::MissingLabel, Rule::MissingLabel, Rule::UnitMismatch],
            "{f:#?}"
        );
        let cx = Context {
            title: Some("KV cache %"),
            thresholds: &[80.0],
            ..Context::default()
        };
        let f = findings("vllm:kv_cache_usage_perc", &inventories(), cx);
        assert_eq!(
            rules(&f),
            [Rule::FractionAsPercent, Rule::UnreachableThreshold],
            "{f:#?}"
        );
    }

    /// A unit file the registry does not list is not even compiled: every file in the family
    /// folders must be listed.
    #[test]
    fn every_unit_file_is_registered() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        let mut files = BTreeSet::new();
        for family in std::fs::read_dir(&dir).unwrap().flatten() {
            for file in std::fs::read_dir(family.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = file.file_name().to_string_lossy().into_owned();
                files.insert(format!("{}/{name}", family.file_name().to_string_lossy()));
            }
        }
        let registered: BTreeSet<String> = Rule::ALL.iter().map(|r| r.file().to_owned()).collect();
        assert_eq!(files, registered, "unit files ≠ registry lines");
    }

    /// `cargo fmt` finds a crate's files by their `mod` items, and the registry declares the
    /// units inside a macro, where it does not look: their format is checked here instead
    /// (rustfmt comes with the pinned toolchain).
    #[test]
    fn every_unit_file_is_formatted() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
        let out = Command::new("rustfmt")
            .args(["--check", "--edition", "2024"])
            .args(Rule::ALL.map(|r| dir.join(r.file())))
            .output()
            .expect("rustfmt runs");
        assert!(
            out.status.success(),
            "unit files not formatted (run rustfmt --edition 2024 on them):\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

//! Family tracking for the streaming parser: which family each sample belongs to, and the
//! cross-line checks (duplicate metadata, `# TYPE` after samples, buckets without `le`).
//!
//! Grouping follows `# TYPE`, never guesses from suffixes: [`Grouper`] keeps the current family
//! (opened by `# HELP`/`# TYPE`/`# UNIT`, or implicitly by a sample that does not fit). A sample
//! belongs to it if its name is the family name or the family name plus a suffix allowed for the
//! family's type ([`Suffix::allowed`]). So `vllm:iteration_tokens_total_bucket` joins the histogram
//! `vllm:iteration_tokens_total`, and `prometheus_client`'s separate `…_created` gauge families are
//! families of their own. Names are compared as raw text; two spellings of one quoted name that
//! differ only in escaping count as different names for the duplicate checks.

use crate::MetricType;
use crate::error::ErrorKind;
use crate::sample::Suffix;
use crate::text::Escaped;
use std::collections::HashSet;

/// Names seen on this page. foldhash, seeded per process: SipHash over every family name was
/// a visible part of scraping 1,000 targets a second.
type Names<'a> = HashSet<&'a str, foldhash::fast::RandomState>;

/// The family samples currently join.
#[derive(Debug, Clone, Copy)]
struct Current<'a> {
    name: Escaped<'a>,
    ty: MetricType,
    has_samples: bool,
}

impl<'a> Current<'a> {
    fn new(name: Escaped<'a>, ty: MetricType) -> Self {
        Current {
            name,
            ty,
            has_samples: false,
        }
    }
}

/// Tracks the current family and the names seen so far. `with_samples` holds the name of every
/// family that got a sample (one insert per family, not per sample), which is what the
/// `TypeAfterSamples` check needs: an untyped family is named after its samples.
#[derive(Debug)]
pub(crate) struct Grouper<'a> {
    current: Option<Current<'a>>,
    default_ty: MetricType,
    typed: Names<'a>,
    helped: Names<'a>,
    united: Names<'a>,
    with_samples: Names<'a>,
    scratch: String,
}

impl<'a> Grouper<'a> {
    /// `default_ty` is the type of families without `# TYPE` (`Untyped` or `Unknown`).
    pub fn new(default_ty: MetricType) -> Self {
        Grouper {
            current: None,
            default_ty,
            typed: Names::default(),
            helped: Names::default(),
            united: Names::default(),
            with_samples: Names::default(),
            scratch: String::new(),
        }
    }

    pub fn help(&mut self, name: Escaped<'a>) -> Result<(), ErrorKind> {
        if !self.helped.insert(name.raw()) {
            return Err(ErrorKind::DuplicateHelp);
        }
        self.enter(name);
        Ok(())
    }

    pub fn unit(&mut self, name: Escaped<'a>) -> Result<(), ErrorKind> {
        if !self.united.insert(name.raw()) {
            return Err(ErrorKind::DuplicateUnit);
        }
        self.enter(name);
        Ok(())
    }

    pub fn type_line(&mut self, name: Escaped<'a>, ty: MetricType) -> Result<(), ErrorKind> {
        if self.typed.contains(name.raw()) {
            return Err(ErrorKind::DuplicateType);
        }
        if self.samples_seen(name.raw(), ty) {
            return Err(ErrorKind::TypeAfterSamples);
        }
        self.typed.insert(name.raw());
        self.enter(name).ty = ty;
        Ok(())
    }

    /// Assigns a sample to a family; returns the family's type and the sample's suffix.
    pub fn sample(
        &mut self,
        name: Escaped<'a>,
        has_le: bool,
    ) -> Result<(MetricType, Suffix), ErrorKind> {
        let member = self
            .current
            .and_then(|cur| Some((cur.ty, member_suffix(cur, name)?)));
        let (ty, suffix) = member.unwrap_or((self.default_ty, Suffix::None));
        let histogram = matches!(ty, MetricType::Histogram | MetricType::GaugeHistogram);
        if histogram && suffix == Suffix::Bucket && !has_le {
            return Err(ErrorKind::BucketWithoutLe);
        }
        if member.is_none() {
            self.current = Some(Current::new(name, self.default_ty));
        }
        self.mark_has_samples();
        Ok((ty, suffix))
    }

    /// Makes `name` the current family (keeping it if it already is).
    fn enter(&mut self, name: Escaped<'a>) -> &mut Current<'a> {
        let default_ty = self.default_ty;
        let cur = self.current.get_or_insert(Current::new(name, default_ty));
        if cur.name != name {
            *cur = Current::new(name, default_ty);
        }
        cur
    }

    fn mark_has_samples(&mut self) {
        if let Some(cur) = self.current.as_mut().filter(|c| !c.has_samples) {
            cur.has_samples = true;
            self.with_samples.insert(cur.name.raw());
        }
    }

    /// Whether any sample that a family `name` of type `ty` would own was already seen.
    fn samples_seen(&mut self, name: &str, ty: MetricType) -> bool {
        if self.with_samples.contains(name) {
            return true;
        }
        Suffix::allowed(ty).iter().any(|suffix| {
            self.scratch.clear();
            self.scratch.push_str(name);
            self.scratch.push_str(suffix.as_str());
            self.with_samples.contains(self.scratch.as_str())
        })
    }
}

/// The suffix of `name` relative to family `cur`, if the sample belongs to it.
fn member_suffix(cur: Current<'_>, name: Escaped<'_>) -> Option<Suffix> {
    let fam = cur.name;
    if !fam.has_escapes() && !name.has_escapes() {
        let rest = name.raw().strip_prefix(fam.raw())?;
        return allowed_suffix(cur.ty, rest);
    }
    let (fam, name) = (fam.unescape(), name.unescape());
    allowed_suffix(cur.ty, name.strip_prefix(fam.as_ref())?)
}

fn allowed_suffix(ty: MetricType, rest: &str) -> Option<Suffix> {
    if rest.is_empty() {
        return Some(Suffix::None);
    }
    let suffix = Suffix::from_suffix(rest)?;
    Suffix::allowed(ty).contains(&suffix).then_some(suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Escaped<'_> {
        Escaped::plain(s)
    }

    #[test]
    fn histogram_named_total_owns_its_buckets() {
        let mut g = Grouper::new(MetricType::Untyped);
        g.type_line(n("vllm:iteration_tokens_total"), MetricType::Histogram)
            .unwrap();
        let got = g
            .sample(n("vllm:iteration_tokens_total_bucket"), true)
            .unwrap();
        assert_eq!(got, (MetricType::Histogram, Suffix::Bucket));
        let got = g
            .sample(n("vllm:iteration_tokens_total_sum"), false)
            .unwrap();
        assert_eq!(got, (MetricType::Histogram, Suffix::Sum));
        assert_eq!(
            g.sample(n("vllm:iteration_tokens_total_bucket"), false),
            Err(ErrorKind::BucketWithoutLe)
        );
    }

    #[test]
    fn counters_in_both_spellings() {
        let mut g = Grouper::new(MetricType::Untyped);
        g.type_line(n("x_total"), MetricType::Counter).unwrap();
        assert_eq!(
            g.sample(n("x_total"), false),
            Ok((MetricType::Counter, Suffix::None))
        );
        // prometheus_client's separate gauge family is not swallowed by the counter.
        g.type_line(n("x_created"), MetricType::Gauge).unwrap();
        assert_eq!(
            g.sample(n("x_created"), false),
            Ok((MetricType::Gauge, Suffix::None))
        );
        g.type_line(n("y"), MetricType::Counter).unwrap();
        assert_eq!(
            g.sample(n("y_total"), false),
            Ok((MetricType::Counter, Suffix::Total))
        );
        assert_eq!(
            g.sample(n("y_created"), false),
            Ok((MetricType::Counter, Suffix::Created))
        );
    }

    #[test]
    fn unmatched_sample_opens_untyped_family() {
        let mut g = Grouper::new(MetricType::Unknown);
        g.type_line(n("a"), MetricType::Gauge).unwrap();
        assert_eq!(
            g.sample(n("a_sum"), false),
            Ok((MetricType::Unknown, Suffix::None))
        );
        assert_eq!(
            g.sample(n("a_sum"), false),
            Ok((MetricType::Unknown, Suffix::None))
        );
    }

    #[test]
    fn metadata_checks() {
        let mut g = Grouper::new(MetricType::Untyped);
        g.help(n("a")).unwrap();
        assert_eq!(g.help(n("a")), Err(ErrorKind::DuplicateHelp));
        g.type_line(n("a"), MetricType::Summary).unwrap();
        assert_eq!(
            g.type_line(n("a"), MetricType::Gauge),
            Err(ErrorKind::DuplicateType)
        );
        g.unit(n("a")).unwrap();
        assert_eq!(g.unit(n("a")), Err(ErrorKind::DuplicateUnit));
        g.sample(n("b_bucket"), true).unwrap();
        assert_eq!(
            g.type_line(n("b"), MetricType::Histogram),
            Err(ErrorKind::TypeAfterSamples)
        );
        assert_eq!(g.type_line(n("b"), MetricType::Gauge), Ok(()));
    }

    #[test]
    fn quoted_names_with_escapes_match_by_decoded_text() {
        let mut g = Grouper::new(MetricType::Untyped);
        g.type_line(Escaped::new(r#"a\"b"#, true), MetricType::Summary)
            .unwrap();
        let got = g.sample(Escaped::new(r#"a\"b_count"#, true), false);
        assert_eq!(got, Ok((MetricType::Summary, Suffix::Count)));
    }
}

//! Whole-page API: the event stream collected into [`Family`] values.
//!
//! [`parse_families`] runs a [`Parser`] and folds its events: `# HELP`/`# TYPE`/`# UNIT` for a new
//! name open a family, and each sample joins the family the parser assigned it to
//! ([`Sample::family_name`]), opening an untyped one if needed. Errors are collected next to the
//! families (lenient) or end the page (strict). Names, help and labels stay borrowed from the input.

use crate::MetricType;
use crate::error::ParseError;
use crate::parse::{Event, Format, ParseOptions, Parser};
use crate::sample::Sample;
use crate::text::Escaped;

/// One metric family: metadata and its samples in page order.
#[derive(Debug, Clone, PartialEq)]
pub struct Family<'a> {
    /// As written in `# TYPE` (text 0.0.4 counters are named `x_total`, OpenMetrics ones `x`).
    pub name: Escaped<'a>,
    pub ty: MetricType,
    pub help: Option<Escaped<'a>>,
    pub unit: Option<&'a str>,
    pub samples: Vec<Sample<'a>>,
}

impl<'a> Family<'a> {
    fn new(name: Escaped<'a>, ty: MetricType) -> Self {
        Family {
            name,
            ty,
            help: None,
            unit: None,
            samples: Vec::new(),
        }
    }
}

/// Parses a whole page leniently (format sniffed): every family, and every bad line as an error.
pub fn parse_families(input: &[u8]) -> (Vec<Family<'_>>, Vec<ParseError>) {
    parse_families_with(input, ParseOptions::lenient())
}

/// [`parse_families`] with explicit options; in strict mode `errors` holds at most one error and
/// the families are those before it.
pub fn parse_families_with(
    input: &[u8],
    options: ParseOptions,
) -> (Vec<Family<'_>>, Vec<ParseError>) {
    let parser = Parser::new(input, options);
    let untyped = match parser.format() {
        Format::Text => MetricType::Untyped,
        Format::OpenMetrics => MetricType::Unknown,
    };
    let mut builder = Builder {
        families: Vec::new(),
        untyped,
    };
    let mut errors = Vec::new();
    for event in parser {
        match event {
            Ok(event) => builder.push(event),
            Err(e) => errors.push(e),
        }
    }
    (builder.families, errors)
}

struct Builder<'a> {
    families: Vec<Family<'a>>,
    untyped: MetricType,
}

impl<'a> Builder<'a> {
    fn push(&mut self, event: Event<'a>) {
        match event {
            Event::Help { name, text } => self.family(name).help = Some(text),
            Event::Type { name, ty } => self.family(name).ty = ty,
            Event::Unit { name, unit } => self.family(name).unit = Some(unit),
            Event::Sample(sample) => self.sample(sample),
            Event::Eof => {}
        }
    }

    /// The last family if it is called `name`, else a new untyped one.
    fn family(&mut self, name: Escaped<'a>) -> &mut Family<'a> {
        let is_last = self.families.last().is_some_and(|f| f.name == name);
        if !is_last {
            self.families.push(Family::new(name, self.untyped));
        }
        let last = self.families.len() - 1;
        &mut self.families[last]
    }

    fn sample(&mut self, sample: Sample<'a>) {
        let name = sample.family_name();
        let is_last = self
            .families
            .last()
            .is_some_and(|f| f.name == name && f.ty == sample.ty);
        if !is_last {
            self.families.push(Family::new(name, sample.ty));
        }
        if let Some(family) = self.families.last_mut() {
            family.samples.push(sample);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_type_and_keeps_metadata() {
        let page = b"# HELP a_total Things.\n# TYPE a_total counter\na_total 1\n\
            # HELP a_created Things.\n# TYPE a_created gauge\na_created 1.7e9\nloose 2\nloose 3\n";
        let (fams, errs) = parse_families(page);
        assert!(errs.is_empty(), "{errs:?}");
        let shape: Vec<(String, MetricType, usize)> = fams
            .iter()
            .map(|f| (f.name.to_string(), f.ty, f.samples.len()))
            .collect();
        assert_eq!(
            shape,
            [
                ("a_total".into(), MetricType::Counter, 1),
                ("a_created".into(), MetricType::Gauge, 1),
                ("loose".into(), MetricType::Untyped, 2),
            ]
        );
        assert_eq!(fams[0].help.unwrap(), "Things.");
    }

    #[test]
    fn openmetrics_unit_and_unknown() {
        let page = b"# TYPE t_seconds gauge\n# UNIT t_seconds seconds\nt_seconds 1\nu 1\n# EOF\n";
        let (fams, errs) = parse_families(page);
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(fams[0].unit, Some("seconds"));
        assert_eq!(fams[1].ty, MetricType::Unknown);
    }

    #[test]
    fn strict_stops_at_first_error() {
        let page = b"a 1\nb x\nc 3\nd y\n";
        let (fams, errs) = parse_families_with(page, ParseOptions::strict());
        assert_eq!(errs.len(), 1);
        assert_eq!(fams.len(), 1);
        let (fams, errs) = parse_families(page);
        assert_eq!((fams.len(), errs.len()), (2, 2));
    }
}

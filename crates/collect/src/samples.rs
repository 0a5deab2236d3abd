//! One scraped page → samples of the series model. Pure: bytes in, `(key, point)`s out.
//!
//! [`KeyCache`] is the per-target memory of series keys: a page repeats last interval's series,
//! so each sample costs one hash lookup of its raw `name{labels}` text instead of building a
//! [`SeriesKey`] (allocating every label). Entries not seen for a scrape are dropped, so a target
//! whose series churn cannot grow it without bound.
//!
//! Rules: DCGM blank sentinels are dropped ([`is_dcgm_blank`]); a sample's own timestamp is kept
//! (Prometheus `honor_timestamps`), else the scrape time is used; malformed lines are counted and
//! the rest of the page is kept.

use llmscope_core::series::{Labels, Point, SeriesKey, is_dcgm_blank, is_integer_text};
use promtext::{Event, Format, ParseError, ParseOptions, Parser, Sample};
use std::collections::HashMap;
use std::sync::Arc;

/// What one page gave.
#[derive(Debug, Default)]
pub struct Page {
    pub samples: Vec<(Arc<SeriesKey>, Point)>,
    /// DCGM "no value" sentinels dropped.
    pub blanks: u64,
    pub error_count: u64,
    /// The first malformed line (line, column, text), if any.
    pub first_error: Option<ParseError>,
}

/// Series keys of one target, by raw `name{labels}` text.
#[derive(Debug, Default)]
pub struct KeyCache {
    // foldhash: hashing every sample's `name{labels}` with SipHash was ~5% of scraping.
    keys: HashMap<Box<str>, (Arc<SeriesKey>, u64), foldhash::fast::RandomState>,
    generation: u64,
    buf: String,
}

impl KeyCache {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn key(&mut self, s: &Sample<'_>) -> Arc<SeriesKey> {
        self.buf.clear();
        self.buf.push_str(s.name.raw());
        self.buf.push('{');
        self.buf.push_str(s.labels.raw());
        let generation = self.generation;
        if let Some((key, seen)) = self.keys.get_mut(self.buf.as_str()) {
            *seen = generation;
            return Arc::clone(key);
        }
        let key = Arc::new(build_key(s));
        let raw: Box<str> = self.buf.as_str().into();
        self.keys.insert(raw, (Arc::clone(&key), generation));
        key
    }

    /// Ends a scrape: forgets keys this scrape did not see when they outnumber the live ones.
    fn end_scrape(&mut self, live: usize) {
        if self.keys.len() > 2 * live.max(16) {
            let current = self.generation;
            self.keys.retain(|_, (_, seen)| *seen == current);
        }
        self.generation += 1;
    }
}

fn build_key(s: &Sample<'_>) -> SeriesKey {
    let labels = s.labels.iter().map(|l| {
        (
            l.name.unescape().into_owned(),
            l.value.unescape().into_owned(),
        )
    });
    SeriesKey::new(s.name.unescape().into_owned(), Labels::new(labels))
}

/// Reads a page scraped at `t` (Unix seconds) in `format`.
pub fn read_page(body: &[u8], format: Format, t: f64, cache: &mut KeyCache) -> Page {
    let mut page = Page::default();
    for event in Parser::new(body, ParseOptions::lenient().with_format(format)) {
        match event {
            Ok(Event::Sample(s)) => take_sample(&s, t, cache, &mut page),
            Ok(_) => {}
            Err(e) => {
                page.error_count += 1;
                page.first_error.get_or_insert(e);
            }
        }
    }
    cache.end_scrape(page.samples.len());
    page
}

fn take_sample(s: &Sample<'_>, t: f64, cache: &mut KeyCache, page: &mut Page) {
    let name = s.name.raw();
    if is_dcgm_blank(name, s.value, is_integer_text(s.value_text)) {
        page.blanks += 1;
        return;
    }
    let t = s.timestamp.map_or(t, |ts| ts.as_seconds());
    page.samples.push((cache.key(s), Point { t, v: s.value }));
}

#[cfg(test)]
mod tests {
    use super::*;

    const DCGM: &str = "\
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\"} 31
# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge
DCGM_FI_DEV_MEMORY_TEMP{gpu=\"0\",UUID=\"GPU-1\"} 9223372036854775794
# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge
DCGM_FI_PROF_DRAM_ACTIVE{gpu=\"0\",UUID=\"GPU-1\"} 140737488355328.000000
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-1\"} 400000000000000
";

    #[test]
    fn dcgm_sentinels_become_missing() {
        let mut cache = KeyCache::default();
        let page = read_page(DCGM.as_bytes(), Format::Text, 10.0, &mut cache);
        let names: Vec<&str> = page.samples.iter().map(|(k, _)| k.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "DCGM_FI_DEV_GPU_UTIL",
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
            ]
        );
        assert_eq!(page.blanks, 2);
        assert_eq!(page.samples[0].0.labels.get("UUID"), Some("GPU-1"));
        assert_eq!(page.samples[0].1, Point { t: 10.0, v: 31.0 });
    }

    #[test]
    fn keys_are_reused_across_scrapes_and_labels_sorted() {
        let mut cache = KeyCache::default();
        let body = b"m{z=\"1\",a=\"x\\\"y\"} 1\n";
        let one = read_page(body, Format::Text, 1.0, &mut cache);
        let two = read_page(body, Format::Text, 2.0, &mut cache);
        assert!(Arc::ptr_eq(&one.samples[0].0, &two.samples[0].0));
        let key = &one.samples[0].0;
        assert_eq!(key.to_string(), r#"m{a="x\"y",z="1"}"#);
    }

    #[test]
    fn malformed_lines_are_counted_and_the_rest_kept() {
        let body = b"<html>\nup 1\nvllm:x{engine=\"0\" 2\ngood{a=\"b\"} NaN\n";
        let page = read_page(body, Format::Text, 5.0, &mut KeyCache::default());
        assert_eq!(page.samples.len(), 2);
        assert!(page.samples[1].1.v.is_nan(), "NaN written is NaN kept");
        assert_eq!(page.error_count, 2);
        assert_eq!(page.first_error.unwrap().line, 1);
    }

    #[test]
    fn own_timestamps_are_honoured() {
        let page = read_page(b"m 1 1500\n", Format::Text, 9.0, &mut KeyCache::default());
        assert_eq!(page.samples[0].1.t, 1.5);
        let om = b"# TYPE m gauge\nm 1 2.5\n# EOF\n";
        let page = read_page(om, Format::OpenMetrics, 9.0, &mut KeyCache::default());
        assert_eq!(page.samples[0].1.t, 2.5);
    }

    #[test]
    fn the_cache_forgets_churned_series() {
        let mut cache = KeyCache::default();
        for i in 0..100 {
            let body = format!("m{{i=\"{i}\"}} 1\n");
            read_page(body.as_bytes(), Format::Text, i as f64, &mut cache);
        }
        assert!(cache.len() <= 40, "{}", cache.len());
    }
}

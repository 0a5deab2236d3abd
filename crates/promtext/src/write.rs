//! Exposition writer: renders families the way the real exporters do, byte for byte.
//!
//! [`Writer`] appends to a `String`. The caller decides family order, series order and label order
//! (exporters differ: `prometheus_client` sorts label names, dcgm-exporter prints its template
//! order), so the writer only handles escaping, number formatting ([`crate::fmt`]) and the
//! sample lines a histogram is made of ([`Writer::histogram`]). Every exposition llmscope
//! writes goes through it: the simulator's exporters and `llmscope watch`'s own `/metrics`.

use crate::MetricType;
use crate::fmt::{go_fixed6, python_float};
use std::fmt::Write as _;

/// How sample values are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatStyle {
    /// `prometheus_client` (`floatToGoString`): vLLM, SGLang, kube-state-metrics-like Python exporters.
    Python,
    /// Go `%f`: dcgm-exporter double fields.
    GoFixed6,
    /// Go `strconv.FormatFloat(v, 'f', -1, 64)`-like shortest form (`1`, `0.5`): Go client_golang,
    /// kube-state-metrics, Kueue.
    GoShortest,
}

/// Appends exposition text to a `String`.
#[derive(Debug)]
pub struct Writer<'a> {
    out: &'a mut String,
    style: FloatStyle,
}

impl<'a> Writer<'a> {
    pub fn new(out: &'a mut String, style: FloatStyle) -> Self {
        Self { out, style }
    }

    /// Writes `# HELP name help` and `# TYPE name type`.
    pub fn family(&mut self, name: &str, help: &str, ty: MetricType) {
        self.help(name, help);
        self.type_line(name, ty);
    }

    /// Writes `# HELP name help`, escaping `\` and newlines.
    pub fn help(&mut self, name: &str, help: &str) {
        self.out.push_str("# HELP ");
        self.out.push_str(name);
        self.out.push(' ');
        for c in help.chars() {
            match c {
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                c => self.out.push(c),
            }
        }
        self.out.push('\n');
    }

    /// Writes `# TYPE name type`.
    pub fn type_line(&mut self, name: &str, ty: MetricType) {
        self.out.push_str("# TYPE ");
        self.out.push_str(name);
        self.out.push(' ');
        self.out.push_str(ty.as_str());
        self.out.push('\n');
    }

    /// Writes one sample line with a float value in the writer's style.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.series(name, labels);
        float(self.out, self.style, value);
        self.out.push('\n');
    }

    /// Writes one sample line with a count (a counter's total, a bucket) as the integer it is.
    pub fn sample_count(&mut self, name: &str, labels: &[(&str, &str)], value: u64) {
        self.series(name, labels);
        let _ = write!(self.out, "{value}");
        self.out.push('\n');
    }

    /// Writes a histogram's samples: `name_bucket` per `(upper bound, cumulative count)` with
    /// `le` after `labels` (the bound in the writer's style, as the exporter's client prints it:
    /// Go `0.5`/`1`, Python `0.5`/`1.0`), the `+Inf` bucket holding `count`, `name_sum`, `name_count`.
    pub fn histogram(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        buckets: &[(f64, u64)],
        sum: f64,
        count: u64,
    ) {
        let bucket = format!("{name}_bucket");
        for &(le, n) in buckets {
            let mut bound = String::new();
            float(&mut bound, self.style, le);
            self.bucket(&bucket, labels, &bound, n);
        }
        self.bucket(&bucket, labels, "+Inf", count);
        self.sample(&format!("{name}_sum"), labels, sum);
        self.sample_count(&format!("{name}_count"), labels, count);
    }

    fn bucket(&mut self, name: &str, labels: &[(&str, &str)], le: &str, n: u64) {
        let mut with_le = labels.to_vec();
        with_le.push(("le", le));
        self.sample_count(name, &with_le, n);
    }

    /// Writes one sample line with an integer value (dcgm-exporter integer fields print `%d`).
    pub fn sample_int(&mut self, name: &str, labels: &[(&str, &str)], value: i64) {
        self.series(name, labels);
        let _ = write!(self.out, "{value}");
        self.out.push('\n');
    }

    /// Writes a raw line (e.g. `# EOF`), adding the newline.
    pub fn raw_line(&mut self, line: &str) {
        self.out.push_str(line);
        self.out.push('\n');
    }

    fn series(&mut self, name: &str, labels: &[(&str, &str)]) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                escape_label_value(self.out, v);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
    }
}

/// Escapes a label value: `\` → `\\`, `"` → `\"`, newline → `\n`.
pub fn escape_label_value(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn float(out: &mut String, style: FloatStyle, v: f64) {
    match style {
        FloatStyle::Python => python_float(out, v),
        FloatStyle::GoFixed6 => go_fixed6(out, v),
        FloatStyle::GoShortest => go_shortest(out, v),
    }
}

fn go_shortest(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_vllm_style_family() {
        let mut s = String::new();
        let mut w = Writer::new(&mut s, FloatStyle::Python);
        w.family(
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            MetricType::Gauge,
        );
        w.sample(
            "vllm:num_requests_running",
            &[("engine", "0"), ("model_name", "Qwen/Qwen3-8B")],
            2.0,
        );
        assert_eq!(
            s,
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} 2.0\n"
        );
    }

    #[test]
    fn escapes_help_and_label_values() {
        let mut s = String::new();
        let mut w = Writer::new(&mut s, FloatStyle::GoFixed6);
        w.help("m", "a\\b\nc");
        w.sample("m", &[("k", "q\"x\\y\nz")], 0.5);
        w.sample_int("n", &[], 42);
        assert_eq!(
            s,
            "# HELP m a\\\\b\\nc\nm{k=\"q\\\"x\\\\y\\nz\"} 0.500000\nn 42\n"
        );
    }

    #[test]
    fn writes_counts_and_histograms_in_the_writers_style() {
        let mut s = String::new();
        let mut w = Writer::new(&mut s, FloatStyle::GoShortest);
        w.sample_count("c_total", &[("kind", "x")], u64::MAX);
        w.histogram("h_seconds", &[("a", "b")], &[(0.5, 1), (1.0, 3)], 2.25, 4);
        assert_eq!(
            s,
            "c_total{kind=\"x\"} 18446744073709551615\n\
             h_seconds_bucket{a=\"b\",le=\"0.5\"} 1\n\
             h_seconds_bucket{a=\"b\",le=\"1\"} 3\n\
             h_seconds_bucket{a=\"b\",le=\"+Inf\"} 4\n\
             h_seconds_sum{a=\"b\"} 2.25\n\
             h_seconds_count{a=\"b\"} 4\n"
        );
        let mut s = String::new();
        Writer::new(&mut s, FloatStyle::Python).histogram("h", &[], &[(1.0, 0)], 0.0, 0);
        assert!(
            s.starts_with("h_bucket{le=\"1.0\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0.0\n"),
            "{s}"
        );
    }
}

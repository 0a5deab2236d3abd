//! `.promql` files and `--expr`: one expression per block, blocks separated by blank lines,
//! `#` lines are comments.

use super::{Query, Source};
use crate::finding::Location;

/// Reads a `.promql` file.
pub fn read(file: &str, content: &str) -> Source {
    let mut queries = Vec::new();
    let mut block: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, line) in content.lines().chain(std::iter::once("")).enumerate() {
        let t = line.trim();
        if t.is_empty() {
            if !block.is_empty() {
                queries.push(query(file, &block.join("\n"), start + 1));
                block.clear();
            }
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        if block.is_empty() {
            start = i;
        }
        block.push(line);
    }
    Source {
        queries,
        ..Source::default()
    }
}

fn query(file: &str, text: &str, line: usize) -> Query {
    let mut q = Query::new(
        text,
        Location {
            file: file.to_owned(),
            line: Some(line as u32),
            column: Some(1),
            ..Location::default()
        },
    );
    q.graph = true;
    q
}

/// An `--expr`: checked as a graph query (an ad-hoc query is usually drawn).
pub fn expr(text: &str) -> Query {
    let mut q = Query::new(
        text,
        Location {
            file: "--expr".to_owned(),
            ..Location::default()
        },
    );
    q.graph = true;
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_comments_and_lines() {
        let s = read(
            "q.promql",
            "# kv\nmax(vllm:kv_cache_usage_perc)\n\n\nsum(\n  rate(x[5m])\n)\n",
        );
        assert_eq!(s.queries.len(), 2);
        assert_eq!(s.queries[0].location.line, Some(2));
        assert_eq!(s.queries[1].location.line, Some(5));
        assert_eq!(s.queries[1].text, "sum(\n  rate(x[5m])\n)");
    }
}

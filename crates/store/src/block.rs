//! Sample blocks: the points of one [`Store::write`](crate::Store::write) batch of one source,
//! packed into one `blocks` row.
//!
//! A row per sample put one B-tree insert per sample at a different place in the table (rows
//! were clustered by series): at 1,000 dcgm targets that was most of the writer's CPU. A block
//! is one append per scrape. Reads decode every block of a source at once, which is what the
//! readers do anyway (a run is read whole).
//!
//! Layout: one format byte ([`FORMAT`]), then per point 24 bytes little-endian: series id
//! (`i64`), `t` (`f64`, Unix seconds), `v` (`f64`, bit for bit: NaN and ±Inf survive).

use crate::StoreError;
use llmscope_core::series::Point;
use std::collections::HashMap;

/// The layout byte of blocks this build writes.
pub const FORMAT: u8 = 1;

const POINT: usize = 24;

/// Appends one point to `out` (which starts with [`start`]).
pub fn push(out: &mut Vec<u8>, series: i64, p: Point) {
    out.extend_from_slice(&series.to_le_bytes());
    out.extend_from_slice(&p.t.to_le_bytes());
    out.extend_from_slice(&p.v.to_le_bytes());
}

/// Clears `out` and writes the format byte.
pub fn start(out: &mut Vec<u8>) {
    out.clear();
    out.push(FORMAT);
}

/// The points of one block, in the order written; `block` is the row id, for the error.
pub fn decode(
    block: i64,
    data: &[u8],
) -> Result<impl Iterator<Item = (i64, Point)> + '_, StoreError> {
    let corrupt = |why: String| StoreError::CorruptBlock { block, why };
    let (&format, body) = data.split_first().ok_or_else(|| corrupt("empty".into()))?;
    if format != FORMAT {
        return Err(corrupt(format!(
            "layout {format}, this llmscope reads layout {FORMAT}"
        )));
    }
    if body.len() % POINT != 0 {
        return Err(corrupt(format!(
            "{} bytes of points is not a multiple of {POINT}",
            body.len()
        )));
    }
    Ok(body.chunks_exact(POINT).map(|c| {
        let word = |i: usize| <[u8; 8]>::try_from(&c[i..i + 8]).unwrap_or_default();
        let series = i64::from_le_bytes(word(0));
        let t = f64::from_le_bytes(word(8));
        let v = f64::from_le_bytes(word(16));
        (series, Point { t, v })
    }))
}

/// Per series, its points from `blocks` (in row order) sorted by time; of two points with one
/// time the first written is kept (a later duplicate of a sample is not a second sample).
#[derive(Debug, Default)]
pub struct SeriesPoints(HashMap<i64, Vec<Point>>);

impl SeriesPoints {
    pub fn add(&mut self, block: i64, data: &[u8]) -> Result<(), StoreError> {
        for (series, p) in decode(block, data)? {
            self.0.entry(series).or_default().push(p);
        }
        Ok(())
    }

    /// Sorts and de-duplicates; then [`Self::take`] hands out each series.
    pub fn finish(&mut self) {
        for points in self.0.values_mut() {
            if !points.is_sorted_by(|a, b| a.t < b.t) {
                // Stable: equal times keep their write order, so `dedup` keeps the first.
                points.sort_by(|a, b| a.t.total_cmp(&b.t));
                points.dedup_by(|later, earlier| later.t == earlier.t);
            }
        }
    }

    pub fn take(&mut self, series: i64) -> Vec<Point> {
        self.0.remove(&series).unwrap_or_default()
    }

    /// Gaps: consecutive points of a series more than `max_gap` seconds apart.
    pub fn gaps(&self, max_gap: f64) -> u64 {
        let within = |p: &Vec<Point>| p.windows(2).filter(|w| w[1].t - w[0].t > max_gap).count();
        self.0.values().map(|p| within(p) as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_round_trip_bit_for_bit() {
        let mut buf = Vec::new();
        start(&mut buf);
        let pts = [
            (3, 1.5, f64::NAN),
            (7, 2.0, f64::NEG_INFINITY),
            (3, 2.5, -0.0),
        ];
        for (s, t, v) in pts {
            push(&mut buf, s, Point { t, v });
        }
        let back: Vec<(i64, Point)> = decode(1, &buf).unwrap().collect();
        assert_eq!(back.len(), 3);
        for ((s, t, v), (bs, bp)) in pts.iter().zip(&back) {
            assert_eq!(
                (*s, t.to_bits(), v.to_bits()),
                (*bs, bp.t.to_bits(), bp.v.to_bits())
            );
        }
    }

    #[test]
    fn corrupt_blocks_are_errors_naming_the_block() {
        for (data, why) in [
            (&[][..], "empty"),
            (&[9u8][..], "layout 9"),
            (&[FORMAT, 1, 2, 3][..], "not a multiple of 24"),
        ] {
            let err = decode(42, data).err().unwrap().to_string();
            assert!(err.contains("block 42") && err.contains(why), "{err}");
        }
    }

    #[test]
    fn duplicates_keep_the_first_write_and_order_is_by_time() {
        let mut buf = Vec::new();
        start(&mut buf);
        for (t, v) in [(2.0, 20.0), (1.0, 10.0), (2.0, 99.0), (4.0, 40.0)] {
            push(&mut buf, 5, Point { t, v });
        }
        let mut all = SeriesPoints::default();
        all.add(1, &buf).unwrap();
        all.finish();
        assert_eq!(all.gaps(1.5), 1);
        let got: Vec<(f64, f64)> = all.take(5).iter().map(|p| (p.t, p.v)).collect();
        assert_eq!(got, [(1.0, 10.0), (2.0, 20.0), (4.0, 40.0)]);
        assert!(all.take(6).is_empty());
    }
}

//! Sample blocks: the points of one [`Store::write`](crate::Store::write) batch of one source,
//! packed into one `blocks` row.
//!
//! A row per sample put one B-tree insert per sample at a different place in the table (rows
//! were clustered by series): at 1,000 dcgm targets that was most of the writer's CPU. A block
//! is one append per scrape. Reads decode every block of a source at once, which is what the
//! readers do anyway (a run is read whole).
//!
//! Layouts, named by a block's first byte:
//! - [`FORMAT`] 3 (written since issue 31): layout 2's points, then the CRC-32 of everything
//!   before it (4 bytes, little-endian). A block whose bytes changed on disk is an error naming
//!   it, never other numbers: without the checksum, 7 of 40 random corruptions decoded into a
//!   different report (generated tokens 6.67 → 9,761/s).
//! - 2 (written since issue 14, still read): per point, in write order,
//!   1. a series tag: varint `0` for the series of the point before, else `zigzag(id) + 1`;
//!   2. the time: the delta of delta of its `f64` bit pattern (as `i64`, wrapping) from the point
//!      before in the block, zigzag varint — a regular step is one byte, and a scrape's block,
//!      one time for all, is one byte a point;
//!   3. the value: its bits XOR the previous value of the same series in the block (XOR 0 at a
//!      series' first point), as one header byte — `0` for an XOR of 0, else
//!      `0x80 | leading_zero_bytes << 3 | trailing_zero_bytes` — and the bytes between.
//!
//!   Both are bit for bit (NaN payloads, ±Inf, −0 survive). A day of 100 pods at 15 s takes
//!   ~4 bytes a point instead of 24: SQLite writes (and checkpoints) a sixth of the pages.
//! - 1 (stores written before): per point 24 bytes little-endian: series id (`i64`), `t`
//!   (`f64`, Unix seconds), `v` (`f64`). Still read.

use crate::StoreError;
use llmscope_core::series::Point;
use std::collections::HashMap;

/// The layout byte of blocks this build writes.
pub const FORMAT: u8 = 3;

/// Layout 2: [`FORMAT`]'s points without the checksum.
const FORMAT_2: u8 = 2;
/// Bytes of the checksum closing a [`FORMAT`] block.
const CHECKSUM: usize = 4;

/// The fixed-width layout of stores written before [`FORMAT`] 2.
const FORMAT_1: u8 = 1;
const POINT_1: usize = 24;

/// Packs points into one block.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
    state: Delta,
}

/// What the next point is encoded against: the point before it in the block.
#[derive(Debug, Default, Clone, Copy)]
struct Delta {
    series: Option<i64>,
    t_bits: u64,
    dt: i64,
    v_bits: u64,
}

impl Encoder {
    /// Starts a new, empty block (the buffer is reused).
    pub fn start(&mut self) {
        self.buf.clear();
        self.buf.push(FORMAT);
        self.state = Delta::default();
    }

    /// Appends one point of `series`.
    pub fn push(&mut self, series: i64, p: Point) {
        let st = &mut self.state;
        if st.series == Some(series) {
            self.buf.push(0);
        } else {
            put_varint(&mut self.buf, zigzag(series).wrapping_add(1));
            st.series = Some(series);
            st.v_bits = 0;
        }
        let t_bits = p.t.to_bits();
        let dt = t_bits.wrapping_sub(st.t_bits) as i64;
        put_varint(&mut self.buf, zigzag(dt.wrapping_sub(st.dt)));
        (st.t_bits, st.dt) = (t_bits, dt);
        let v_bits = p.v.to_bits();
        put_xor(&mut self.buf, v_bits ^ st.v_bits);
        st.v_bits = v_bits;
    }

    /// The block, closed by its checksum: the bytes to store. Points pushed after this start a
    /// new block only after [`Encoder::start`].
    pub fn seal(&mut self) -> &[u8] {
        let sum = crc32fast::hash(&self.buf);
        self.buf.extend_from_slice(&sum.to_le_bytes());
        &self.buf
    }
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_xor(out: &mut Vec<u8>, x: u64) {
    if x == 0 {
        out.push(0);
        return;
    }
    let lead = x.leading_zeros() / 8;
    let trail = x.trailing_zeros() / 8;
    out.push(0x80 | (lead as u8) << 3 | trail as u8);
    let bytes = x.to_be_bytes();
    out.extend_from_slice(&bytes[lead as usize..8 - trail as usize]);
}

/// Reads a block's bytes, naming what is wrong with them.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .data
            .get(self.at)
            .ok_or_else(|| format!("ends inside a point at byte {}", self.at))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(format!("a varint longer than 10 bytes at byte {}", self.at))
    }

    fn xor(&mut self) -> Result<u64, String> {
        let head = self.byte()?;
        if head == 0 {
            return Ok(0);
        }
        let (lead, trail) = (usize::from(head >> 3 & 7), usize::from(head & 7));
        if head & 0xc0 != 0x80 || lead + trail >= 8 {
            return Err(format!("value header {head:#04x} at byte {}", self.at - 1));
        }
        let mut bytes = [0u8; 8];
        for b in &mut bytes[lead..8 - trail] {
            *b = self.byte()?;
        }
        Ok(u64::from_be_bytes(bytes))
    }
}

/// Calls `each` with the points of one block, in the order written; `block` is the row id, for
/// the error.
pub fn decode(block: i64, data: &[u8], mut each: impl FnMut(i64, Point)) -> Result<(), StoreError> {
    let corrupt = |why: String| StoreError::CorruptBlock { block, why };
    let (&format, body) = data.split_first().ok_or_else(|| corrupt("empty".into()))?;
    match format {
        FORMAT => {
            let Some(cut) = data.len().checked_sub(CHECKSUM).filter(|c| *c >= 1) else {
                return Err(corrupt(format!(
                    "{} bytes cannot hold its checksum",
                    data.len()
                )));
            };
            let (sealed, stored) = data.split_at(cut);
            let stored = u32::from_le_bytes(<[u8; 4]>::try_from(stored).unwrap_or_default());
            let computed = crc32fast::hash(sealed);
            if stored != computed {
                return Err(corrupt(format!(
                    "checksum mismatch (stored {stored:08x}, its bytes give {computed:08x}): the block changed after it was written"
                )));
            }
            decode_2(&sealed[1..], &mut each).map_err(corrupt)
        }
        FORMAT_2 => decode_2(body, &mut each).map_err(corrupt),
        FORMAT_1 => {
            if body.len() % POINT_1 != 0 {
                return Err(corrupt(format!(
                    "{} bytes of points is not a multiple of {POINT_1}",
                    body.len()
                )));
            }
            for c in body.chunks_exact(POINT_1) {
                let word = |i: usize| <[u8; 8]>::try_from(&c[i..i + 8]).unwrap_or_default();
                let series = i64::from_le_bytes(word(0));
                let t = f64::from_le_bytes(word(8));
                let v = f64::from_le_bytes(word(16));
                each(series, Point { t, v });
            }
            Ok(())
        }
        other => Err(corrupt(format!(
            "layout {other}, this llmscope reads layouts {FORMAT_1} to {FORMAT}"
        ))),
    }
}

fn decode_2(body: &[u8], each: &mut impl FnMut(i64, Point)) -> Result<(), String> {
    let mut r = Reader { data: body, at: 0 };
    let mut st = Delta::default();
    while r.at < body.len() {
        let tag = r.varint()?;
        match (tag, st.series) {
            (0, None) => return Err("the first point continues no series".into()),
            (0, Some(_)) => {}
            (tag, _) => {
                st.series = Some(unzigzag(tag - 1));
                st.v_bits = 0;
            }
        }
        st.dt = st.dt.wrapping_add(unzigzag(r.varint()?));
        st.t_bits = st.t_bits.wrapping_add(st.dt as u64);
        st.v_bits ^= r.xor()?;
        let series = st.series.unwrap_or_default();
        each(
            series,
            Point {
                t: f64::from_bits(st.t_bits),
                v: f64::from_bits(st.v_bits),
            },
        );
    }
    Ok(())
}

/// Per series, its points from `blocks` (in row order) sorted by time; of two points with one
/// time the first written is kept (a later duplicate of a sample is not a second sample).
#[derive(Debug, Default)]
pub struct SeriesPoints(HashMap<i64, Vec<Point>>);

impl SeriesPoints {
    /// Adds the points of `block`, whose row says it holds `n`: a block decoding to another
    /// count (a changed layout byte read as an older layout) is corrupt.
    pub fn add(&mut self, block: i64, n: i64, data: &[u8]) -> Result<(), StoreError> {
        let mut got = 0i64;
        decode(block, data, |series, p| {
            got += 1;
            self.0.entry(series).or_default().push(p)
        })?;
        if got != n {
            return Err(StoreError::CorruptBlock {
                block,
                why: format!("it decodes to {got} points where its row says {n}"),
            });
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
    use proptest::prelude::*;

    fn encode(points: &[(i64, f64, f64)]) -> Vec<u8> {
        let mut enc = Encoder::default();
        enc.start();
        for &(s, t, v) in points {
            enc.push(s, Point { t, v });
        }
        enc.seal().to_vec()
    }

    fn back(block: &[u8]) -> Vec<(i64, u64, u64)> {
        let mut out = Vec::new();
        decode(1, block, |s, p| out.push((s, p.t.to_bits(), p.v.to_bits()))).unwrap();
        out
    }

    fn bits(points: &[(i64, f64, f64)]) -> Vec<(i64, u64, u64)> {
        points
            .iter()
            .map(|&(s, t, v)| (s, t.to_bits(), v.to_bits()))
            .collect()
    }

    #[test]
    fn points_round_trip_bit_for_bit() {
        let pts = [
            (3, 1.5, f64::NAN),
            (7, 2.0, f64::NEG_INFINITY),
            (3, 2.5, -0.0),
            (3, 2.5, f64::from_bits(0x7ff8_dead_beef_0001)),
            (-4, f64::NAN, f64::MAX),
            (i64::MAX, -1e300, f64::MIN_POSITIVE),
        ];
        assert_eq!(back(&encode(&pts)), bits(&pts));
    }

    #[test]
    fn a_regular_series_costs_a_few_bytes_a_point() {
        // A day of one counter at 15 s, as a Prometheus range gives it.
        let t0 = 1_764_614_400.0;
        let pts: Vec<_> = (0..5_760)
            .map(|i| (9, t0 + 15.0 * f64::from(i), f64::from(i * 37)))
            .collect();
        let block = encode(&pts);
        assert_eq!(back(&block), bits(&pts));
        let per_point = block.len() as f64 / pts.len() as f64;
        assert!(per_point < 6.0, "{per_point:.1} bytes a point");
        // A scrape: many series, one time.
        let scrape: Vec<_> = (1..=200).map(|s| (s, t0, 3.0)).collect();
        let block = encode(&scrape);
        assert_eq!(back(&block), bits(&scrape));
        assert!(block.len() < 200 * 6, "{} bytes", block.len());
    }

    #[test]
    fn blocks_of_the_fixed_layout_are_still_read() {
        let mut old = vec![FORMAT_1];
        for (s, t, v) in [(3i64, 1.5f64, 7.0f64), (4, 2.0, f64::NAN)] {
            old.extend_from_slice(&s.to_le_bytes());
            old.extend_from_slice(&t.to_le_bytes());
            old.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(back(&old), bits(&[(3, 1.5, 7.0), (4, 2.0, f64::NAN)]));
    }

    #[test]
    fn corrupt_blocks_are_errors_naming_the_block() {
        let good = encode(&[(5, 10.0, 1.25), (5, 11.0, 1.5)]);
        // The same points in layout 2 (no checksum), as stores written before wrote them.
        let mut unsealed = good[..good.len() - CHECKSUM].to_vec();
        unsealed[0] = FORMAT_2;
        for (data, why) in [
            (&[][..], "empty"),
            (&[9u8][..], "layout 9"),
            (&[FORMAT_1, 1, 2, 3][..], "not a multiple of 24"),
            (&good[..good.len() - 1], "checksum mismatch"),
            (&[FORMAT, 1, 2][..], "cannot hold its checksum"),
            (&unsealed[..unsealed.len() - 1], "ends inside a point"),
            (&[FORMAT_2, 0, 0, 0][..], "continues no series"),
            (&[FORMAT_2, 2, 0, 0x41][..], "value header 0x41"),
            (
                &[
                    FORMAT_2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                ][..],
                "varint",
            ),
        ] {
            let err = decode(42, data, |_, _| {}).err().unwrap().to_string();
            assert!(
                err.contains("block 42") && err.contains(why),
                "{why}: {err}"
            );
        }
    }

    /// A scrape's block (200 series of a vLLM and dcgm page) with any one byte changed, or cut
    /// short, is an error naming the block — never other numbers.
    #[test]
    fn every_changed_byte_is_caught() {
        let scrape: Vec<_> = (1..=200)
            .map(|s| (s, 1_800_000_000.5, f64::from(s as i32) * 0.37))
            .collect();
        let good = encode(&scrape);
        assert_eq!(back(&good), bits(&scrape));
        for at in 0..good.len() {
            for mask in [0x01u8, 0x10, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[at] ^= mask;
                let err = SeriesPoints::default().add(7, 200, &bad).err();
                assert!(
                    err.as_ref()
                        .is_some_and(|e| e.to_string().contains("block 7")),
                    "byte {at} ^ {mask:#x} decoded: {err:?}"
                );
            }
        }
        for len in 0..good.len() {
            assert!(
                SeriesPoints::default().add(7, 200, &good[..len]).is_err(),
                "cut at {len}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_points_round_trip(
            pts in proptest::collection::vec(
                (
                    prop_oneof![Just(1i64), Just(2), (i64::MIN + 1)..=i64::MAX],
                    any::<u64>().prop_map(f64::from_bits),
                    any::<u64>().prop_map(f64::from_bits),
                ),
                0..64,
            )
        ) {
            prop_assert_eq!(back(&encode(&pts)), bits(&pts));
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut data = data;
            data.insert(0, FORMAT);
            let _ = decode(1, &data, |_, _| {});
        }
    }

    #[test]
    fn duplicates_keep_the_first_write_and_order_is_by_time() {
        let block = encode(&[
            (5, 2.0, 20.0),
            (5, 1.0, 10.0),
            (5, 2.0, 99.0),
            (5, 4.0, 40.0),
        ]);
        let mut all = SeriesPoints::default();
        let err = all.add(1, 5, &block).unwrap_err().to_string();
        assert!(
            err.contains("decodes to 4 points where its row says 5"),
            "{err}"
        );
        let mut all = SeriesPoints::default();
        all.add(1, 4, &block).unwrap();
        all.finish();
        assert_eq!(all.gaps(1.5), 1);
        let got: Vec<(f64, f64)> = all.take(5).iter().map(|p| (p.t, p.v)).collect();
        assert_eq!(got, [(1.0, 10.0), (2.0, 20.0), (4.0, 40.0)]);
        assert!(all.take(6).is_empty());
    }
}

//! A series as one line of Unicode blocks (`▁▂▃▄▅▆▇█`) for a terminal, on the page's
//! [`TimeAxis`]: each character is a slice of time; a slice with no sample — a hole in the
//! series, or before it began — is a space, never the lowest block.

use super::scale::TimeAxis;
use super::series::split;

const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// `points` over `time` in `width` characters, scaled from 0 (or the lowest value, if below 0)
/// to the highest value.
pub fn sparkline(points: &[(f64, f64)], time: TimeAxis, width: usize) -> String {
    let (runs, _) = split(points);
    let slice = (time.to - time.from) / width as f64;
    let cells: Vec<Option<f64>> = (0..width)
        .map(|i| {
            let a = time.from + i as f64 * slice;
            cell(&runs, a, a + slice)
        })
        .collect();
    let values = cells.iter().flatten();
    let lo = values.clone().copied().fold(0.0, f64::min);
    let hi = values.copied().fold(f64::NEG_INFINITY, f64::max);
    cells
        .iter()
        .map(|c| c.map_or(' ', |v| block(v, lo, hi)))
        .collect()
}

/// The value of the slice `[a, b)`: the mean of its samples, or where none fell in it but a run
/// of samples crosses it, the last sample before it.
fn cell(runs: &[Vec<(f64, f64)>], a: f64, b: f64) -> Option<f64> {
    let run = runs
        .iter()
        .find(|r| r.first().is_some_and(|p| p.0 < b) && r.last().is_some_and(|p| p.0 >= a))?;
    let inside: Vec<f64> = run
        .iter()
        .filter(|p| p.0 >= a && p.0 < b)
        .map(|p| p.1)
        .collect();
    if inside.is_empty() {
        return run.iter().rev().find(|p| p.0 < a).map(|p| p.1);
    }
    Some(inside.iter().sum::<f64>() / inside.len() as f64)
}

/// The block for `v` between `lo` and `hi`.
fn block(v: f64, lo: f64, hi: f64) -> char {
    if hi <= lo {
        return BLOCKS[0];
    }
    let i = ((v - lo) / (hi - lo) * 7.0).round() as usize;
    BLOCKS[i.min(7)]
}

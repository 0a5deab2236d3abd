//! A small seeded random source for arrival times and synthetic prompts.
//!
//! [`Rng`] is SplitMix64: fast, reproducible from a `u64` seed, good enough for load shaping (not
//! for cryptography). On top of it: uniform, exponential, normal (Box–Muller) and gamma
//! (Marsaglia–Tsang) draws — exactly what the schedules and prompt generators need, without a
//! dependency.

/// SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose whole sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in the open interval (0, 1): never 0, so `ln` is always finite.
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Exponential with mean 1.
    pub fn exp1(&mut self) -> f64 {
        -self.uniform().ln()
    }

    /// Standard normal.
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Gamma with the given shape and scale 1 (mean = shape).
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            // Boost: Gamma(a) = Gamma(a + 1) · U^(1/a).
            return self.gamma(shape + 1.0) * self.uniform().powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_var(xs: &[f64]) -> (f64, f64) {
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64;
        (m, v)
    }

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
    }

    #[test]
    fn distributions_have_the_right_moments() {
        let mut r = Rng::new(1);
        let e: Vec<f64> = (0..100_000).map(|_| r.exp1()).collect();
        let (m, v) = mean_var(&e);
        assert!(
            (m - 1.0).abs() < 0.02 && (v - 1.0).abs() < 0.05,
            "exp {m} {v}"
        );
        let n: Vec<f64> = (0..100_000).map(|_| r.normal()).collect();
        let (m, v) = mean_var(&n);
        assert!(m.abs() < 0.02 && (v - 1.0).abs() < 0.03, "normal {m} {v}");
        for shape in [0.25, 1.0, 4.0] {
            let g: Vec<f64> = (0..100_000).map(|_| r.gamma(shape)).collect();
            let (m, v) = mean_var(&g);
            assert!((m / shape - 1.0).abs() < 0.03, "gamma({shape}) mean {m}");
            assert!((v / shape - 1.0).abs() < 0.08, "gamma({shape}) var {v}");
        }
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::new(3);
        assert!((0..10_000).all(|_| r.below(7) < 7));
    }
}

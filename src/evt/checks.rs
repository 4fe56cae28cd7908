//! What a tail fit assumes, checked on the run's envelope (the largest latency of each
//! interval, per thread): that large values come independently (Ljung–Box on the maxima) and
//! that the run is the same process throughout (two-sample Kolmogorov–Smirnov, first half
//! against second half).

use schemars::JsonSchema;
use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// Lags Ljung–Box looks at.
const LAGS: usize = 10;
/// Fewer interval maxima than this per series say nothing.
const MIN_POINTS: usize = 20;

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Check {
    pub name: &'static str,
    /// The smallest p-value over the series (threads) tested.
    pub p_value: f64,
    /// The p-value compared against 0.05 divided by the series tested.
    pub passed: bool,
    pub series: usize,
    pub detail: String,
}

/// Ljung–Box Q of `x` over lags 1..=`lags`, and its p-value against χ²(lags).
pub fn ljung_box(x: &[f64], lags: usize) -> Option<(f64, f64)> {
    let n = x.len();
    if n <= lags + 1 {
        return None;
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let var: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    if var <= 0.0 {
        return None;
    }
    let mut q = 0.0;
    for k in 1..=lags {
        let r: f64 = (k..n).map(|i| (x[i] - mean) * (x[i - k] - mean)).sum::<f64>() / var;
        q += r * r / (n - k) as f64;
    }
    q *= n as f64 * (n as f64 + 2.0);
    let chi = ChiSquared::new(lags as f64).ok()?;
    Some((q, 1.0 - chi.cdf(q)))
}

/// Two-sample Kolmogorov–Smirnov: D and its asymptotic p-value.
pub fn ks_two_sample(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
    }
    let ne = (a.len() * b.len()) as f64 / (a.len() + b.len()) as f64;
    let lambda = (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d;
    Some((d, kolmogorov_q(lambda)))
}

/// P(K > λ) of the Kolmogorov distribution.
fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 1e-3 {
        return 1.0;
    }
    let mut sum = 0.0;
    for j in 1..=100 {
        let term = (-2.0 * (j * j) as f64 * lambda * lambda).exp();
        sum += if j % 2 == 1 { term } else { -term };
        if term < 1e-12 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// Both checks over the series of interval maxima (one per thread).
pub fn run(series: &[Vec<f64>]) -> Vec<Check> {
    let usable: Vec<&Vec<f64>> = series.iter().filter(|s| s.len() >= MIN_POINTS).collect();
    if usable.is_empty() {
        return Vec::new();
    }
    let alpha = 0.05 / usable.len() as f64;
    let mut out = Vec::new();
    let lb: Vec<f64> = usable.iter().filter_map(|s| ljung_box(s, LAGS.min(s.len() / 4)).map(|r| r.1)).collect();
    if let Some(p) = lb.iter().copied().reduce(f64::min) {
        out.push(Check {
            name: "independence",
            p_value: p,
            passed: p >= alpha,
            series: lb.len(),
            detail: format!("Ljung–Box on the interval maxima, lags 1–{LAGS}"),
        });
    }
    let ks: Vec<f64> = usable
        .iter()
        .filter_map(|s| {
            let (first, second) = s.split_at(s.len() / 2);
            ks_two_sample(first, second).map(|r| r.1)
        })
        .collect();
    if let Some(p) = ks.iter().copied().reduce(f64::min) {
        out.push(Check {
            name: "stationarity",
            p_value: p,
            passed: p >= alpha,
            series: ks.len(),
            detail: "Kolmogorov–Smirnov, interval maxima of the first half against the second".into(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut r = SplitMix64(seed);
        (0..n).map(|_| r.unit()).collect()
    }

    #[test]
    fn white_noise_passes_and_a_random_walk_fails_independence() {
        let white = noise(500, 1);
        let (_, p) = ljung_box(&white, 10).unwrap();
        assert!(p > 0.01, "p {p}");
        let mut walk = white.clone();
        for i in 1..walk.len() {
            walk[i] += walk[i - 1];
        }
        let (_, p) = ljung_box(&walk, 10).unwrap();
        assert!(p < 1e-6, "p {p}");
    }

    #[test]
    fn a_shift_between_halves_fails_stationarity() {
        let a = noise(300, 2);
        let same = noise(300, 3);
        assert!(ks_two_sample(&a, &same).unwrap().1 > 0.01);
        let shifted: Vec<f64> = same.iter().map(|x| x + 0.3).collect();
        assert!(ks_two_sample(&a, &shifted).unwrap().1 < 1e-6);
        let mut series = a.clone();
        series.extend(&shifted);
        let checks = run(&[series]);
        let st = checks.iter().find(|c| c.name == "stationarity").unwrap();
        assert!(!st.passed, "{st:?}");
        assert!(run(&[noise(10, 4)]).is_empty(), "too short to check");
    }
}

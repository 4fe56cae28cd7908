//! Declustering: large latencies come in bursts (one stall delays several wake-ups), and a
//! tail fit assumes independent exceedances. Ferro and Segers' intervals estimator gives the
//! extremal index θ; the largest θ·N inter-exceedance gaps separate the clusters, and each
//! cluster keeps its maximum.

pub struct Declustered {
    pub extremal_index: f64,
    /// Each cluster's largest value.
    pub maxima: Vec<u64>,
}

/// `over`: exceedances as (series, index in the series, value). Series are declustered apart.
pub fn decluster(over: &[(u32, u64, u64)]) -> Declustered {
    let mut sorted = over.to_vec();
    sorted.sort_unstable_by_key(|x| (x.0, x.1));
    // Gaps between consecutive exceedances of the same series, with the position after each.
    let gaps: Vec<(u64, usize)> = sorted
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0].0 == w[1].0)
        .map(|(i, w)| (w[1].1 - w[0].1, i + 1))
        .collect();
    let theta = intervals_estimator(&gaps.iter().map(|g| g.0).collect::<Vec<_>>());
    let n = sorted.len();
    // Clusters: θ·N of them; the largest gaps (plus each series' start) separate them.
    let series_starts = (1..n).filter(|&i| sorted[i].0 != sorted[i - 1].0).count();
    let wanted = ((theta * n as f64).round() as usize).max(1);
    let splits_from_gaps = wanted.saturating_sub(1 + series_starts).min(gaps.len());
    let mut by_size = gaps.clone();
    by_size.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut cut = vec![false; n];
    for &(_, at) in by_size.iter().take(splits_from_gaps) {
        cut[at] = true;
    }
    for i in 1..n {
        if sorted[i].0 != sorted[i - 1].0 {
            cut[i] = true;
        }
    }
    let mut maxima = Vec::new();
    let mut current: Option<u64> = None;
    for (i, x) in sorted.iter().enumerate() {
        if cut[i] {
            maxima.extend(current.take());
        }
        current = Some(current.map_or(x.2, |m| m.max(x.2)));
    }
    maxima.extend(current);
    Declustered { extremal_index: theta, maxima }
}

/// Ferro and Segers (2003): θ from the inter-exceedance times alone.
fn intervals_estimator(t: &[u64]) -> f64 {
    if t.is_empty() {
        return 1.0;
    }
    let n = t.len() as f64;
    let theta = if t.iter().all(|&x| x <= 2) {
        let s: f64 = t.iter().map(|&x| x as f64).sum();
        let s2: f64 = t.iter().map(|&x| (x * x) as f64).sum();
        2.0 * s * s / (n * s2)
    } else {
        let s: f64 = t.iter().map(|&x| x as f64 - 1.0).sum();
        let s2: f64 = t.iter().map(|&x| (x as f64 - 1.0) * (x as f64 - 2.0)).sum();
        if s2 <= 0.0 {
            1.0
        } else {
            2.0 * s * s / (n * s2)
        }
    };
    theta.clamp(1.0 / (n + 1.0), 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolated_exceedances_stay_apart_and_bursts_become_one() {
        // Independent exceedances: geometric gaps of mean 1000 samples; θ near 1, every one
        // its own cluster.
        let mut r = crate::rng::SplitMix64(5);
        let mut at = 0u64;
        let lone: Vec<(u32, u64, u64)> = (0..200)
            .map(|i| {
                at += 3 + (-(1.0 - r.unit()).ln() * 1000.0) as u64;
                (0, at, 100 + i)
            })
            .collect();
        let d = decluster(&lone);
        assert!(d.extremal_index > 0.8, "θ {}", d.extremal_index);
        assert!(d.maxima.len() >= 160, "{} clusters", d.maxima.len());
        // The same, each followed by two more exceedances in the next samples: bursts of 3.
        let bursts: Vec<(u32, u64, u64)> =
            lone.iter().flat_map(|&(s, i, x)| [(s, i, x), (s, i + 1, x / 2), (s, i + 2, x / 3)]).collect();
        let d = decluster(&bursts);
        assert!((d.extremal_index - 1.0 / 3.0).abs() < 0.1, "θ {}", d.extremal_index);
        assert!((180..=220).contains(&d.maxima.len()), "{} clusters", d.maxima.len());
        assert!(d.maxima.iter().all(|m| *m >= 100), "each cluster keeps its largest value");
    }

    #[test]
    fn series_are_declustered_apart() {
        let two: Vec<(u32, u64, u64)> = vec![(0, 5, 10), (1, 5, 20), (0, 6, 11), (1, 6, 21)];
        let d = decluster(&two);
        let mut m = d.maxima.clone();
        m.sort_unstable();
        assert!(m.contains(&21) && m.iter().any(|&x| x == 11 || x == 10), "{m:?}");
    }
}

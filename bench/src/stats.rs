//! Order statistics for the bench: quantiles by linear interpolation between
//! closest ranks (the R-7 / spreadsheet definition), so a handful of
//! repetitions still gives a defined p99 (close to the worst run) instead of
//! an arbitrary nearest-rank pick.

/// The `q`-quantile (`0 ≤ q ≤ 1`, clamped) of `sorted`, which must be in
/// ascending order. `None` when there are no samples.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let position = q.clamp(0.0, 1.0) * last as f64;
    let below = position.floor();
    let fraction = position - below;
    // `position` lies in 0..=last, so both ranks are in bounds.
    let lo = (below as usize).min(last);
    let hi = (lo + 1).min(last);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * fraction)
}

/// Which side of a metric is bad: its tail is taken there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Times and counts: the tail is the high end.
    Lower,
    /// Rates and speed-ups: the tail is the low end.
    Higher,
}

/// What the report shows of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Number of samples (NaNs dropped).
    pub n: usize,
    /// Median.
    pub median: f64,
    /// The 99th percentile on the bad side: p99 for lower-is-better
    /// metrics, p1 for higher-is-better ones.
    pub tail: f64,
    /// The worst sample: the maximum, or the minimum when higher is better.
    pub worst: f64,
}

impl Summary {
    /// Summarises `samples`; `None` if there are none (NaNs are ignored).
    pub fn of(samples: &[f64], better: Better) -> Option<Summary> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        let (tail_q, worst) = match better {
            Better::Lower => (0.99, *sorted.last()?),
            Better::Higher => (0.01, *sorted.first()?),
        };
        Some(Summary {
            n: sorted.len(),
            median: quantile_sorted(&sorted, 0.5)?,
            tail: quantile_sorted(&sorted, tail_q)?,
            worst,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let sorted: Vec<f64> = (1..=101).map(f64::from).collect();
        assert_eq!(quantile_sorted(&sorted, 0.5), Some(51.0));
        assert_eq!(quantile_sorted(&sorted, 0.99), Some(100.0));
        assert_eq!(quantile_sorted(&sorted, 0.0), Some(1.0));
        assert_eq!(quantile_sorted(&sorted, 1.0), Some(101.0));
        assert!(close(
            quantile_sorted(&[1.0, 2.0], 0.5).unwrap_or(f64::NAN),
            1.5
        ));
        assert!(close(
            quantile_sorted(&[10.0, 20.0, 30.0], 0.99).unwrap_or(f64::NAN),
            29.8
        ));
        assert_eq!(quantile_sorted(&[7.0], 0.99), Some(7.0));
        assert_eq!(quantile_sorted(&[], 0.5), None);
        assert_eq!(quantile_sorted(&[1.0, 2.0], 7.0), Some(2.0));
    }

    #[test]
    fn summary_takes_the_tail_on_the_bad_side() {
        let times = Summary::of(&[3.0, 1.0, 2.0, f64::NAN], Better::Lower);
        let times = times.unwrap_or_else(|| panic!("samples present"));
        assert_eq!(times.n, 3);
        assert!(close(times.median, 2.0));
        assert!(close(times.tail, 2.98));
        assert!(close(times.worst, 3.0));

        let rates = Summary::of(&[300.0, 100.0, 200.0], Better::Higher);
        let rates = rates.unwrap_or_else(|| panic!("samples present"));
        assert!(close(rates.median, 200.0));
        assert!(close(rates.tail, 102.0));
        assert!(close(rates.worst, 100.0));

        assert_eq!(Summary::of(&[], Better::Lower), None);
        assert_eq!(Summary::of(&[f64::NAN], Better::Higher), None);
    }
}

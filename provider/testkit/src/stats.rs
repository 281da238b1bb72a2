//! Percentiles and milliseconds for the tables benchmarks print (p50,
//! p95): nearest rank, so each figure is a time that was measured.

use std::time::Duration;

/// The `p` quantile (0–1) of `samples`, nearest rank; sorts `samples`.
///
/// # Panics
///
/// When `samples` is empty: a benchmark that measured nothing.
pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index.min(samples.len() - 1)]
}

/// The median (p50) of `samples`; sorts `samples`.
pub fn median(samples: &mut [f64]) -> f64 {
    percentile(samples, 0.5)
}

/// `duration` in milliseconds, as the tables print them.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut samples = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(median(&mut samples), 3.0);
        assert_eq!(percentile(&mut samples, 0.95), 5.0);
        assert_eq!(percentile(&mut samples, 0.0), 1.0);
        assert_eq!(percentile(&mut [7.0], 0.95), 7.0);
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
    }
}

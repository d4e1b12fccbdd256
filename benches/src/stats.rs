//! The benchmarks' statistics and the formatting of their figures, in one place for `bench`,
//! its HTTP part, its Worker part and the load generator.
//!
//! Statistics: [`Ranked`] holds samples ordered best first (lowest first for times, highest
//! first for throughput); its best, median and percentiles read one sample by rank, never an
//! interpolation, so that every figure shown is one that was measured. The median is the
//! middle sample, and of the two middle ones of an even count the worse (the one further from
//! the best), which is also the 50th [`Ranked::percentile`]. [`ratio`] and [`per_second`]
//! never divide by zero.
//!
//! Formatting: durations as milliseconds ([`millis`]) or microseconds ([`micros`],
//! [`micros_per_op`]), memory as MiB ([`mib`]), counts with thousands separators
//! ([`thousands`]), and one line of the plain-text tables of `bench` ([`row`], [`print_row`]).

use std::cmp::Ordering;
use std::time::Duration;

/// A measured figure that can be ranked and divided: a duration, a count or a rate.
pub(crate) trait Figure: Copy {
    /// The figure as a number, durations in seconds (a ratio of two is unit-free).
    fn value(self) -> f64;

    /// Orders two figures from the lowest up (`f64` by its total order).
    fn order(&self, other: &Self) -> Ordering;
}

impl Figure for Duration {
    fn value(self) -> f64 {
        self.as_secs_f64()
    }

    fn order(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}

impl Figure for u64 {
    #[allow(clippy::cast_precision_loss)] // counts and nanoseconds far below 2^52
    fn value(self) -> f64 {
        self as f64
    }

    fn order(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }
}

impl Figure for f64 {
    fn value(self) -> f64 {
        self
    }

    fn order(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

/// Samples ordered best first; empty if no sample was taken.
#[derive(Clone, Debug)]
pub(crate) struct Ranked<T>(Vec<T>);

impl<T: Figure> Ranked<T> {
    /// Ranks samples of which the lowest is best (times).
    pub(crate) fn lowest_first(mut samples: Vec<T>) -> Ranked<T> {
        samples.sort_unstable_by(T::order);
        Ranked(samples)
    }

    /// Ranks samples of which the highest is best (throughput).
    pub(crate) fn highest_first(mut samples: Vec<T>) -> Ranked<T> {
        samples.sort_unstable_by(|a, b| b.order(a));
        Ranked(samples)
    }

    /// How many samples there are.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The best sample.
    pub(crate) fn best(&self) -> Option<T> {
        self.0.first().copied()
    }

    /// The worst sample.
    pub(crate) fn worst(&self) -> Option<T> {
        self.0.last().copied()
    }

    /// The middle sample; of an even count, the worse of the two middle ones.
    pub(crate) fn median(&self) -> Option<T> {
        self.0.get(self.0.len() / 2).copied()
    }

    /// The sample at `fraction` of the way from the best to the worst (0.99 for the p99 of
    /// times), the nearest one by rank; `fraction` is held to 0..=1.
    pub(crate) fn percentile(&self, fraction: f64) -> Option<T> {
        let last = self.0.len().checked_sub(1)?;
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )] // a rank between 0 and `last`
        let rank = (last as f64 * fraction.clamp(0.0, 1.0)).round() as usize;
        self.0.get(rank).copied()
    }

    /// The best and the median sample, as the tables show them.
    pub(crate) fn spread(&self) -> Option<Spread<T>> {
        Some(Spread {
            best: self.best()?,
            median: self.median()?,
        })
    }
}

/// The best and the median of several runs of one measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread<T> {
    /// The best run.
    pub(crate) best: T,
    /// The median run.
    pub(crate) median: T,
}

/// The median of `samples` of which the lowest is best; `None` if there is none.
pub(crate) fn median<T: Figure>(samples: Vec<T>) -> Option<T> {
    Ranked::lowest_first(samples).median()
}

/// `a` divided by `b`, as `1.25` for "1.25x"; a zero `b` counts as a nanosecond (or 1e-9).
pub(crate) fn ratio<T: Figure>(a: T, b: T) -> f64 {
    a.value() / b.value().max(1e-9)
}

/// `count` events in `took`, per second; a zero `took` counts as a nanosecond.
pub(crate) fn per_second(count: u64, took: Duration) -> f64 {
    ratio(count.value(), took.as_secs_f64())
}

/// A duration in milliseconds, two decimals: `1.25 ms`.
pub(crate) fn millis(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

/// A duration in microseconds, one decimal: `12.5 µs`.
pub(crate) fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

/// The time of one of `ops` operations that took `elapsed` in all, in microseconds, two
/// decimals (`1.25 µs`): finer than [`micros`], as per-operation figures are small.
pub(crate) fn micros_per_op(elapsed: Duration, ops: u64) -> String {
    format!("{:.2} µs", elapsed.as_secs_f64() * 1e6 / ops.value())
}

/// KiB as MiB, one decimal: `12.5 MiB`.
pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib.value() / 1024.0)
}

/// `10000` as `10,000`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// One line of `bench`'s plain-text tables: the measurement, three right-aligned figures and
/// the target, without trailing spaces.
pub(crate) fn row(what: &str, first: &str, second: &str, third: &str, target: &str) -> String {
    let line = format!("{what:<34} {first:>11} {second:>11} {third:>10}   {target}");
    line.trim_end().to_owned()
}

/// Prints one [`row`].
pub(crate) fn print_row(what: &str, first: &str, second: &str, third: &str, target: &str) {
    println!("{}", row(what, first, second, third, target));
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{
        Ranked, Spread, median, mib, micros, micros_per_op, millis, per_second, ratio, row,
        thousands,
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn no_sample_has_no_figure() {
        let none = Ranked::<Duration>::lowest_first(Vec::new());
        assert_eq!(none.len(), 0);
        assert_eq!(none.best(), None);
        assert_eq!(none.worst(), None);
        assert_eq!(none.median(), None);
        assert_eq!(none.percentile(0.0), None);
        assert_eq!(none.percentile(0.99), None);
        assert_eq!(none.spread(), None);
        assert_eq!(median(Vec::<u64>::new()), None);
    }

    #[test]
    fn one_sample_is_every_figure() {
        let one = Ranked::lowest_first(vec![ms(7)]);
        assert_eq!(one.best(), Some(ms(7)));
        assert_eq!(one.worst(), Some(ms(7)));
        assert_eq!(one.median(), Some(ms(7)));
        for fraction in [0.0, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(one.percentile(fraction), Some(ms(7)));
        }
    }

    #[test]
    fn the_median_of_an_odd_count_is_the_middle() {
        assert_eq!(median(vec![ms(5), ms(1), ms(3)]), Some(ms(3)));
        assert_eq!(median(vec![9_u64, 1, 8, 2, 7]), Some(7));
    }

    #[test]
    fn the_median_of_an_even_count_is_the_worse_middle_one() {
        assert_eq!(median(vec![ms(4), ms(1), ms(3), ms(2)]), Some(ms(3)));
        let throughput = Ranked::highest_first(vec![10.0, 40.0, 20.0, 30.0]);
        assert_eq!(throughput.median(), Some(20.0));
        assert_eq!(
            throughput.spread(),
            Some(Spread {
                best: 40.0,
                median: 20.0
            })
        );
    }

    #[test]
    fn the_50th_percentile_is_the_median() {
        for count in 1..=12_u64 {
            let ranked = Ranked::lowest_first((0..count).rev().collect());
            assert_eq!(ranked.percentile(0.5), ranked.median(), "{count} samples");
        }
    }

    #[test]
    fn percentiles_are_the_nearest_rank_and_held_to_the_ends() {
        let hundred = Ranked::lowest_first((1..=100_u64).rev().collect());
        assert_eq!(hundred.len(), 100);
        assert_eq!(hundred.percentile(0.0), Some(1));
        assert_eq!(hundred.percentile(0.9), Some(90));
        assert_eq!(hundred.percentile(0.99), Some(99));
        assert_eq!(hundred.percentile(1.0), Some(100));
        assert_eq!(hundred.percentile(-1.0), Some(1));
        assert_eq!(hundred.percentile(2.0), Some(100));
        assert_eq!(hundred.best(), Some(1));
        assert_eq!(hundred.worst(), Some(100));
        // 9 * 0.9 = 8.1 rounds to the ninth sample; 9 * 0.99 = 8.91 to the tenth.
        let ten = Ranked::lowest_first((1..=10_u64).collect());
        assert_eq!(ten.percentile(0.9), Some(9));
        assert_eq!(ten.percentile(0.99), Some(10));
    }

    #[test]
    fn ratios_and_rates_never_divide_by_zero() {
        assert!((ratio(ms(3), ms(2)) - 1.5).abs() < 1e-12);
        assert!((ratio(6.0, 4.0) - 1.5).abs() < 1e-12);
        assert!(ratio(ms(1), Duration::ZERO).is_finite());
        assert!((per_second(500, ms(250)) - 2000.0).abs() < 1e-9);
        assert!(per_second(1, Duration::ZERO).is_finite());
        assert!(per_second(0, Duration::ZERO).abs() < f64::EPSILON);
    }

    #[test]
    fn durations_and_memory_are_formatted_with_their_units() {
        assert_eq!(millis(Duration::from_micros(1250)), "1.25 ms");
        assert_eq!(millis(Duration::ZERO), "0.00 ms");
        assert_eq!(micros(Duration::from_nanos(12_500)), "12.5 µs");
        assert_eq!(micros(Duration::from_nanos(300)), "0.3 µs");
        assert_eq!(micros_per_op(ms(5), 4000), "1.25 µs");
        assert_eq!(mib(1536), "1.5 MiB");
        assert_eq!(mib(0), "0.0 MiB");
    }

    #[test]
    fn thousands_are_separated_by_commas() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn a_row_aligns_its_columns_and_drops_trailing_spaces() {
        assert_eq!(
            row("measurement", "best", "median", "peak RSS", "target"),
            format!(
                "{:<34} {:>11} {:>11} {:>10}   target",
                "measurement", "best", "median", "peak RSS"
            )
        );
        assert_eq!(
            row("x", "1", "", "", ""),
            format!("{:<34} {:>11}", "x", "1")
        );
    }
}

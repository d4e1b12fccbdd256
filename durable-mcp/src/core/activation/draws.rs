//! The random stream a seed fixes, and the seed's stored form.

use std::ops::Range;

/// A seed as stored: 32 hex digits.
pub(super) fn format_seed(seed: u128) -> String {
    format!("\"{seed:032x}\"")
}

/// A seed as [`format_seed`] stores it.
pub(super) fn parse_seed(text: &str) -> Option<u128> {
    let hex = text.strip_prefix('"')?.strip_suffix('"')?;
    u128::from_str_radix(hex, 16).ok()
}

/// The `n`-th number (from 1) of the stream `seed` fixes: SplitMix64's output function over
/// a counter, offset and keyed by the seed's halves. Not cryptographic: it is reproducible
/// from the journal by design.
pub(super) fn nth(seed: u128, n: u64) -> u64 {
    let (high, low) = ((seed >> 64) as u64, seed as u64);
    let mut z = low.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15)) ^ high;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A number in `[0, 1)` from a draw: its top 53 bits, as a fraction.
pub fn unit_interval(draw: u64) -> f64 {
    (draw >> 11) as f64 / (1u64 << 53) as f64
}

/// A number in `range` (not empty) from a draw, by scaling: the bias is below
/// `range.len() / 2^64`, nothing a body can notice.
pub fn within(draw: u64, range: Range<u64>) -> u64 {
    let span = range.end - range.start;
    range.start + ((u128::from(draw) * u128::from(span)) >> 64) as u64
}

/// A version 4 UUID, hyphenated in lower case, from two draws.
pub fn uuid(high: u64, low: u64) -> String {
    let bits = (u128::from(high) << 64) | u128::from(low);
    // Version 4 in bits 76..80, the RFC 9562 variant (0b10) in bits 62..64.
    let bits = (bits & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::{format_seed, nth, parse_seed, unit_interval, uuid, within};

    #[test]
    fn a_seed_reads_back_as_written() {
        let seed = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        assert_eq!(parse_seed(&format_seed(seed)), Some(seed));
        assert_eq!(parse_seed("12"), None);
    }

    #[test]
    fn the_stream_depends_on_the_seed_and_the_position() {
        let a = (1..=4).map(|n| nth(7, n)).collect::<Vec<_>>();
        let b = (1..=4).map(|n| nth(8, n)).collect::<Vec<_>>();
        assert_ne!(a, b);
        assert_eq!(a, (1..=4).map(|n| nth(7, n)).collect::<Vec<_>>());
        let mut distinct = a.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 4);
    }

    #[test]
    fn derived_values_stay_in_their_ranges() {
        for draw in [0, 1, u64::MAX / 2, u64::MAX] {
            assert!((0.0..1.0).contains(&unit_interval(draw)));
            assert!((10..13).contains(&within(draw, 10..13)));
        }
        assert_eq!(within(u64::MAX, 0..u64::MAX), u64::MAX - 1);
    }

    #[test]
    fn a_uuid_has_version_4_and_the_rfc_variant() {
        let text = uuid(u64::MAX, 0);
        assert_eq!(text, "ffffffff-ffff-4fff-8000-000000000000");
        let text = uuid(0, u64::MAX);
        assert_eq!(text, "00000000-0000-4000-bfff-ffffffffffff");
    }
}

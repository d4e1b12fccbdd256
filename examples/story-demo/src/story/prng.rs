//! The walk's randomness: a draw is a pure function of the walk's seed and the roll's key, so
//! the same seed retells the same story and a replay draws what the first run drew.
//!
//! The key is hashed with 64-bit FNV-1a, mixed into the seed, and the result is scrambled with
//! one round of SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
//! generators", 2014), whose output passes the usual statistical batteries. Neither is
//! cryptographic; they only need to spread seeds and keys evenly and never change, since
//! stories are replayed from their journals.

/// 64-bit FNV-1a of `text`.
pub fn fnv1a(text: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    text.bytes().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// One SplitMix64 output for the state `x`.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The draw for the roll under `key` in a walk seeded with `seed`.
pub fn draw(seed: u64, key: &str) -> u64 {
    splitmix64(seed ^ fnv1a(key))
}

/// The index of the branch `draw` picks among `weights`: branch `i` is picked for a share
/// `weights[i] / sum` of all draws. `None` when there is no weight or they sum to 0.
pub fn pick(weights: &[u32], draw: u64) -> Option<usize> {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    if total == 0 {
        return None;
    }
    // Scale the draw onto 0..total (the high bits, so no modulo bias worth the name).
    let mut point = ((u128::from(draw) * u128::from(total)) >> 64) as u64;
    for (i, &weight) in weights.iter().enumerate() {
        let weight = u64::from(weight);
        if point < weight {
            return Some(i);
        }
        point -= weight;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // FNV-1a's published test vectors, and SplitMix64's first output from state 0.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn pick_follows_the_weights() {
        assert_eq!(pick(&[1, 1], 0), Some(0));
        assert_eq!(pick(&[1, 1], u64::MAX), Some(1));
        assert_eq!(pick(&[0, 5], 0), Some(1));
        assert_eq!(pick(&[], 7), None);
        let mut counts = [0_u32; 2];
        for i in 0..10_000 {
            counts[pick(&[1, 3], draw(i, "roll:x")).unwrap()] += 1;
        }
        assert!((2_000..3_000).contains(&counts[0]), "{counts:?}");
    }
}

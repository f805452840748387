//! The statistics the detectors read: the Poisson tail of a partition's count, and the two
//! small sketches (space-saving top-k, HyperLogLog distinct counts). Pure and bounded: every
//! loop here has a fixed bound whatever the input.

/// `ln Γ(x)` for x > 0 (Lanczos, g = 7, n = 9; |error| < 1e-13 over the range used here).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // reflection: Γ(x)Γ(1-x) = π / sin(πx)
        let s = (std::f64::consts::PI * x)
            .sin()
            .abs()
            .max(f64::MIN_POSITIVE);
        return std::f64::consts::PI.ln() - s.ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// `ln P(X ≥ m)` for X ~ Poisson(λ): the chance that a partition whose fair share is λ holds
/// m or more by luck alone. Summed from m upward, at most 4,096 terms, the rest bounded by a
/// geometric series (the terms shrink by λ/(j+1) < 1 once j ≥ λ).
pub fn ln_poisson_upper_tail(m: u64, lambda: f64) -> f64 {
    if m == 0 || lambda <= 0.0 {
        return if m == 0 { 0.0 } else { f64::NEG_INFINITY };
    }
    let mf = m as f64;
    if mf <= lambda {
        // at or below the mean: the tail is at least about a half; 0 is near enough for a test
        // that only asks whether it is tiny
        return 0.0;
    }
    let first = -lambda + mf * lambda.ln() - ln_gamma(mf + 1.0);
    // sum of term_j / term_m for j = m, m+1, …
    let mut sum = 1.0f64;
    let mut term = 1.0f64;
    let mut j = mf;
    for _ in 0..4096 {
        let r = lambda / (j + 1.0);
        term *= r;
        sum += term;
        j += 1.0;
        if term < 1e-17 * sum {
            return first + sum.ln();
        }
    }
    // the rest, at most term · r / (1 - r) with r the last ratio (< 1 here)
    let r = lambda / (j + 1.0);
    first + (sum + term * r / (1.0 - r)).ln()
}

/// Space-saving (Metwally et al.): the heaviest keys of a stream in a fixed number of slots.
/// A key's count is over-estimated by at most its `error`; any key with more than
/// total / capacity occurrences is in the table. Keys are kept truncated to `key_bytes`.
#[derive(Debug, Clone)]
pub struct TopK {
    capacity: usize,
    key_bytes: usize,
    slots: Vec<TopEntry>,
    /// At most the smallest count of a slot: counts only grow, and the slot replaced goes
    /// from the smallest to one more, so the smallest never falls. A slot with this count is
    /// the lightest, found without looking at every slot.
    floor: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopEntry {
    /// The kept key's hash (`hash`): compared before the bytes.
    pub hash: u64,
    pub key: Vec<u8>,
    /// The key was longer than what is kept.
    pub truncated: bool,
    pub count: u64,
    pub error: u64,
}

impl TopK {
    pub fn new(capacity: usize, key_bytes: usize) -> TopK {
        TopK {
            capacity: capacity.max(1),
            key_bytes,
            slots: Vec::new(),
            floor: 0,
        }
    }

    pub fn add(&mut self, key: &[u8]) {
        let kept = &key[..key.len().min(self.key_bytes)];
        self.add_hashed(key, hash(kept));
    }

    /// `add` with the hash of the key's kept bytes (its first `key_bytes`) already known.
    pub fn add_hashed(&mut self, key: &[u8], h: u64) {
        let kept = &key[..key.len().min(self.key_bytes)];
        let truncated = kept.len() < key.len();
        if let Some(e) = self
            .slots
            .iter_mut()
            .find(|e| e.hash == h && e.key == kept && e.truncated == truncated)
        {
            e.count += 1;
            return;
        }
        if self.slots.len() < self.capacity {
            self.slots.push(TopEntry {
                hash: h,
                key: kept.to_vec(),
                truncated,
                count: 1,
                error: 0,
            });
            return;
        }
        // replace the smallest (the first of them): the newcomer inherits its count as
        // possible error. A slot at the floor is one; else the floor is raised to the
        // smallest count.
        let floor = self.floor;
        let at = self
            .slots
            .iter()
            .position(|e| e.count == floor)
            .or_else(|| {
                let (i, _) = self.slots.iter().enumerate().min_by_key(|(_, e)| e.count)?;
                Some(i)
            });
        if let Some(min) = at.and_then(|i| self.slots.get_mut(i)) {
            let floor = min.count;
            self.floor = floor;
            min.hash = h;
            min.key.clear();
            min.key.extend_from_slice(kept);
            min.truncated = truncated;
            min.count = floor + 1;
            min.error = floor;
        }
    }

    /// The entries, heaviest first.
    pub fn top(&self) -> Vec<&TopEntry> {
        let mut v: Vec<&TopEntry> = self.slots.iter().collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        v
    }

    /// Bytes held (for the memory budget).
    pub fn bytes(&self) -> usize {
        self.capacity * (std::mem::size_of::<TopEntry>() + self.key_bytes)
    }
}

/// HyperLogLog with 2^8 registers (about 6.5% standard error), for distinct counts of
/// prefixes and leading fields. The hash is the caller's (64 bits, well mixed).
#[derive(Debug, Clone)]
pub struct Distinct {
    registers: [u8; 256],
}

impl Default for Distinct {
    fn default() -> Self {
        Distinct {
            registers: [0; 256],
        }
    }
}

impl Distinct {
    pub fn add_hash(&mut self, h: u64) {
        self.add_update(Self::update_of(h));
    }

    /// What adding hash `h` does, in two bytes (its register, then its rank): what a
    /// statement's rows carry to the table's count (`add_update`), with no count of their own.
    #[inline]
    pub fn update_of(h: u64) -> u16 {
        let idx = (h >> 56) as u16;
        let rank = ((h << 8).leading_zeros() + 1).min(57) as u16;
        (idx << 8) | rank
    }

    /// `add_hash` of the hash whose `update_of` this is.
    #[inline]
    pub fn add_update(&mut self, u: u16) {
        let rank = (u & 0xff) as u8;
        if let Some(r) = self.registers.get_mut(usize::from(u >> 8)) {
            if rank > *r {
                *r = rank;
            }
        }
    }

    /// The updates that make this count (one a register in use), for a statement that
    /// gathered more than it may carry.
    pub fn updates(&self) -> impl Iterator<Item = u16> + '_ {
        self.registers
            .iter()
            .enumerate()
            .filter(|(_, r)| **r > 0)
            .map(|(i, r)| ((i as u16) << 8) | u16::from(*r))
    }

    pub fn estimate(&self) -> f64 {
        let m = self.registers.len() as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self
            .registers
            .iter()
            .map(|&r| 2f64.powi(-i32::from(r)))
            .sum();
        let raw = alpha * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            // small range: linear counting
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }
}

/// A 64-bit hash of bytes (the same MurmurHash the partition function uses; any good mix
/// would do).
pub fn hash(bytes: &[u8]) -> u64 {
    murmur2::murmur64a(bytes, 0x0b4b_7e11)
}

/// MurmurHash3's 64-bit finaliser: spreads every input bit over the output.
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Hashes of a key's first `lengths[i]` bytes (the whole key where it is shorter), in one pass:
/// FNV-1a over the bytes, its state taken at each length and finalised. `lengths` ascending.
pub fn prefix_hashes<const N: usize>(key: &[u8], lengths: &[usize; N]) -> [u64; N] {
    let mut out = [0u64; N];
    let mut state: u64 = 0xcbf2_9ce4_8422_2325;
    let mut at = 0;
    for (slot, &len) in out.iter_mut().zip(lengths) {
        let end = len.min(key.len());
        for &b in key.get(at..end).unwrap_or_default() {
            state = (state ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        at = at.max(end);
        *slot = fmix(state ^ end as u64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut f = 1.0f64;
        for n in 1..60u32 {
            f *= f64::from(n);
            let got = ln_gamma(f64::from(n) + 1.0);
            assert!((got - f.ln()).abs() < 1e-9 * f.ln().max(1.0), "{n}: {got}");
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn poisson_tail_matches_a_direct_sum() {
        for &(m, lambda) in &[
            (5u64, 2.0f64),
            (20, 10.0),
            (40, 10.0),
            (130, 100.0),
            (3, 0.5),
        ] {
            let direct: f64 = (m..m + 400)
                .map(|j| (-lambda + j as f64 * lambda.ln() - ln_gamma(j as f64 + 1.0)).exp())
                .sum();
            let got = ln_poisson_upper_tail(m, lambda).exp();
            assert!(
                (got - direct).abs() <= 1e-9 * direct.max(1e-300),
                "m {m} λ {lambda}: {got} vs {direct}"
            );
        }
        assert_eq!(ln_poisson_upper_tail(0, 3.0), 0.0);
        assert!(ln_poisson_upper_tail(1_000_000, 1.0) < -1e6);
    }

    /// Space-saving read plainly: the first slot of the key found by looking at each slot, else
    /// a new slot, else the first lightest slot replaced (every slot looked at).
    fn plain_add(slots: &mut Vec<TopEntry>, cap: usize, kb: usize, key: &[u8], h: u64) {
        let kept = &key[..key.len().min(kb)];
        let truncated = kept.len() < key.len();
        if let Some(e) = slots
            .iter_mut()
            .find(|e| e.hash == h && e.key == kept && e.truncated == truncated)
        {
            e.count += 1;
            return;
        }
        if slots.len() < cap {
            slots.push(TopEntry {
                hash: h,
                key: kept.to_vec(),
                truncated,
                count: 1,
                error: 0,
            });
            return;
        }
        let min = slots.iter().map(|e| e.count).min().unwrap_or(0);
        if let Some(e) = slots.iter_mut().find(|e| e.count == min) {
            *e = TopEntry {
                hash: h,
                key: kept.to_vec(),
                truncated,
                count: min + 1,
                error: min,
            };
        }
    }

    /// The lightest slot found from the floor is the one a plain reading (`plain_add`: every
    /// slot looked at, the first lightest replaced) finds: the same keys, counts and errors in
    /// the same places, on streams with hash collisions, ties and long keys.
    #[test]
    fn top_k_keeps_what_a_plain_reading_keeps() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for round in 0..40 {
            let (cap, kb) = (1 + round % 9, 1 + round % 5);
            let mut t = TopK::new(cap, kb);
            let mut reference: Vec<TopEntry> = Vec::new();
            for _ in 0..3_000 {
                let r = next();
                // few keys (hits), many keys (misses), skewed; a weak hash (collisions)
                let id = match r % 3 {
                    0 => r >> 8 & 7,
                    1 => r >> 8 & 1023,
                    _ => (r >> 8 & 63) * (r >> 20 & 63) / 64,
                };
                let key = format!("{id:0width$}", width = (r >> 40 & 7) as usize);
                let h = if round % 2 == 0 {
                    id % 5
                } else {
                    hash(key.as_bytes())
                };
                t.add_hashed(key.as_bytes(), h);
                plain_add(&mut reference, cap, kb, key.as_bytes(), h);
                assert_eq!(t.slots, reference, "round {round}");
            }
        }
    }

    #[test]
    fn top_k_keeps_every_heavy_key() {
        let mut t = TopK::new(8, 16);
        for i in 0..10_000u32 {
            t.add(format!("k{}", i % 1000).as_bytes());
            if i % 4 == 0 {
                t.add(b"hot");
            }
        }
        let top = t.top();
        assert_eq!(top[0].key, b"hot");
        assert!(top[0].count >= 2500 && top[0].count - top[0].error <= 2500);
        let mut long = TopK::new(2, 4);
        long.add(b"abcdefgh");
        assert_eq!(long.top()[0].key, b"abcd");
        assert!(long.top()[0].truncated);
    }

    #[test]
    fn prefix_hashes_are_the_prefixes_own() {
        let lengths = [1, 2, 4, 8];
        let a = prefix_hashes(b"abcdefghij", &lengths);
        let b = prefix_hashes(b"abcdXXXX", &lengths);
        assert_eq!(a[..3], b[..3]);
        assert_ne!(a[3], b[3]);
        // a key shorter than a length hashes whole at that length and the longer ones
        let short = prefix_hashes(b"ab", &lengths);
        assert_eq!(short[1], short[2]);
        assert_eq!(short[2], short[3]);
        assert_eq!(short[1], a[1]);
        let mut d = Distinct::default();
        for i in 0..5000u32 {
            d.add_hash(prefix_hashes(&i.to_be_bytes(), &[4])[0]);
        }
        assert!((d.estimate() - 5000.0).abs() < 1000.0, "{}", d.estimate());
    }

    #[test]
    fn distinct_counts_within_a_few_percent() {
        for &n in &[4u64, 97, 1000, 50_000] {
            let mut d = Distinct::default();
            for i in 0..n {
                d.add_hash(hash(&i.to_le_bytes()));
                d.add_hash(hash(&i.to_le_bytes()));
            }
            let e = d.estimate();
            assert!((e - n as f64).abs() <= 0.2 * n as f64 + 1.0, "{n}: {e}");
        }
    }
}

//! Record keys and values, YCSB style: `user` + FNV-64 hash of the key
//! number (or the number itself for ordered inserts), fields `field0..N`.

use super::rng::Rng;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1 over the 8 little-endian bytes, made
/// non-negative like Java's `Math.abs`.
#[inline]
pub(crate) fn fnv64(mut val: u64) -> u64 {
    let mut h = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        h ^= octet;
        h = h.wrapping_mul(FNV_PRIME_64);
    }
    (h as i64).unsigned_abs()
}

/// Order of keys in the load phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InsertOrder {
    /// `user` + fnv64(n): inserts spread over the key space (YCSB default).
    #[default]
    Hashed,
    /// `user` + n.
    Ordered,
}

/// Formats keys into a reused buffer (no allocation per key).
#[derive(Debug, Clone)]
pub struct KeyFormat {
    pub order: InsertOrder,
    /// Zero-pad the number to this many digits (YCSB `zeropadding`).
    pub padding: usize,
}

impl KeyFormat {
    /// Writes the key of record `n` into `buf` (cleared first).
    #[inline]
    pub fn write(&self, n: u64, buf: &mut String) {
        let v = match self.order {
            InsertOrder::Hashed => fnv64(n),
            InsertOrder::Ordered => n,
        };
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(v);
        buf.clear();
        buf.push_str("user");
        for _ in digits.len()..self.padding {
            buf.push('0');
        }
        buf.push_str(digits);
    }

    /// The key of record `n`, allocated.
    pub fn key(&self, n: u64) -> String {
        let mut s = String::with_capacity(24);
        self.write(n, &mut s);
        s
    }
}

/// Field names `field0..field{n-1}`, computed once.
pub(crate) fn field_names(n: u32) -> Vec<String> {
    (0..n).map(|i| format!("field{i}")).collect()
}

/// A pool of random printable bytes; values are slices of it at random
/// offsets, so producing a value allocates nothing.
#[derive(Debug, Clone)]
pub struct ValuePool {
    bytes: String,
    len: usize,
    seed: u64,
}

const POOL: usize = 1 << 16;
/// Streams of the per-record generators of [`ValuePool::record`], apart
/// from the workers' (small numbers) and the pool's own.
const RECORD_STREAM: u64 = 1 << 62;

impl ValuePool {
    /// A pool for values of `len` bytes.
    pub fn new(len: usize, seed: u64) -> ValuePool {
        let mut r = Rng::new(seed, 0x5A5A);
        let total = POOL + len;
        let bytes: String = (0..total)
            .map(|_| (b' ' + 1 + r.below(94) as u8) as char)
            .collect();
        ValuePool { bytes, len, seed }
    }

    /// The value offsets of record `n`, a function of the seed and `n`
    /// alone: a load writes the same data whichever worker, batch size or
    /// thread count inserts the record.
    #[inline]
    pub fn record(&self, n: u64, offsets: &mut [usize]) {
        let mut r = Rng::new(self.seed, RECORD_STREAM | n);
        for o in offsets {
            *o = self.offset(&mut r);
        }
    }

    /// A value of the configured length.
    #[inline]
    pub fn pick(&self, rng: &mut Rng) -> &str {
        let off = rng.below(POOL as u64) as usize;
        &self.bytes[off..off + self.len]
    }

    /// A random offset for [`ValuePool::at`].
    #[inline]
    pub(crate) fn offset(&self, rng: &mut Rng) -> usize {
        rng.below(POOL as u64) as usize
    }

    /// The value starting at `offset`.
    #[inline]
    pub fn at(&self, offset: usize) -> &str {
        &self.bytes[offset..offset + self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Display for InsertOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InsertOrder::Hashed => "hashed",
            InsertOrder::Ordered => "ordered",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv64_matches_ycsb_for_known_inputs() {
        // Computed by hand from YCSB's Utils.fnvhash64 loop.
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnv64(0), (h as i64).unsigned_abs());
        assert_ne!(fnv64(1), fnv64(2));
    }

    #[test]
    fn ordered_keys_are_padded_and_hashed_keys_are_not_sequential() {
        let f = KeyFormat {
            order: InsertOrder::Ordered,
            padding: 6,
        };
        assert_eq!(f.key(42), "user000042");
        assert_eq!(f.key(1234567), "user1234567");
        let h = KeyFormat {
            order: InsertOrder::Hashed,
            padding: 1,
        };
        assert_eq!(h.key(42), format!("user{}", fnv64(42)));
    }

    #[test]
    fn values_have_the_configured_length_and_are_printable() {
        let p = ValuePool::new(100, 3);
        let mut r = Rng::new(1, 0);
        for _ in 0..1000 {
            let v = p.pick(&mut r);
            assert_eq!(v.len(), 100);
            assert!(v.bytes().all(|b| b.is_ascii_graphic()));
        }
    }

    #[test]
    fn record_values_depend_on_the_seed_and_record_number_only() {
        let p = ValuePool::new(10, 3);
        let (mut a, mut b, mut c) = ([0; 4], [0; 4], [0; 4]);
        p.record(41, &mut a);
        p.record(42, &mut b);
        ValuePool::new(10, 3).record(41, &mut c);
        assert_eq!(a, c);
        assert_ne!(a, b);
        let mut d = [0; 4];
        ValuePool::new(10, 4).record(41, &mut d);
        assert_ne!(a, d);
    }
}

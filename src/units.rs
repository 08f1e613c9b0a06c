//! Units parsed once at the edge: sizes, shares, durations and CPU sets.
//!
//! Every spec field that carries a unit is one of these types, so the rest of
//! the code never parses a string again. Each type round-trips through serde
//! as the human form (`"12GiB"`, `"50%"`, `"1s"`, `"0-3,6"`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// Why a unit string was refused; the message is shown to users as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

fn unit_err(msg: impl Into<String>) -> UnitError {
    UnitError(msg.into())
}

/// Largest size benchcage accepts (1 PiB): anything above is a typo.
pub(crate) const MAX_BYTES: u64 = 1 << 50;

/// A size in bytes.
///
/// Accepted forms: plain bytes (`1048576`), binary suffixes (`512KiB`,
/// `512MiB`, `1GiB`, `2TiB`), the short forms engines use (`512k`, `12g`,
/// `1m`, `1t`, binary as in TokuMX and the JVM), and decimal SI suffixes
/// (`500MB`, `2GB`). Fractions are allowed (`1.5GiB`). Negative, empty and
/// absurd (over 1 PiB) sizes are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

impl Bytes {
    pub(crate) const KIB: u64 = 1024;
    pub const MIB: u64 = 1024 * 1024;
    pub(crate) const GIB: u64 = 1024 * 1024 * 1024;

    pub fn from_mib(m: u64) -> Self {
        Bytes(m * Self::MIB)
    }
    pub fn from_gib(g: u64) -> Self {
        Bytes(g * Self::GIB)
    }
    pub fn as_u64(self) -> u64 {
        self.0
    }
    /// Size in GiB as a float, for engines that take `cacheSizeGB: 1.5`.
    pub(crate) fn as_gib_f64(self) -> f64 {
        self.0 as f64 / Self::GIB as f64
    }
    pub(crate) fn as_mib_f64(self) -> f64 {
        self.0 as f64 / Self::MIB as f64
    }
    /// Multiply by a factor (e.g. an environment's `scale`), rounding down to
    /// a whole MiB when the result is at least 1 MiB so configs stay readable.
    pub fn scaled(self, factor: f64) -> Self {
        let raw = (self.0 as f64 * factor).floor() as u64;
        if raw >= Self::MIB {
            Bytes(raw / Self::MIB * Self::MIB)
        } else {
            Bytes(raw)
        }
    }
    pub fn saturating_sub(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_sub(other.0))
    }
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let shown = crate::error::excerpt(t);
        if t.is_empty() {
            return Err(unit_err("empty size; write e.g. `512MiB`, `1GiB` or `12g`"));
        }
        if t.starts_with('-') {
            return Err(unit_err(format!(
                "size `{shown}` is negative; sizes must be positive"
            )));
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, suffix) = t.split_at(split);
        let value: f64 = num.parse().map_err(|_| {
            unit_err(format!(
                "`{shown}` is not a size; write e.g. `512MiB`, `1GiB`, `12g` or a number of bytes"
            ))
        })?;
        let mult: u64 = match suffix.trim() {
            "" | "B" | "b" => 1,
            "k" | "K" | "KiB" | "kib" | "Ki" => Self::KIB,
            "m" | "M" | "MiB" | "mib" | "Mi" => Self::MIB,
            "g" | "G" | "GiB" | "gib" | "Gi" => Self::GIB,
            "t" | "T" | "TiB" | "tib" | "Ti" => Self::GIB * 1024,
            "KB" | "kB" => 1000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "TB" => 1_000_000_000_000,
            other => {
                return Err(unit_err(format!(
                    "unknown size unit `{}` in `{shown}`; use B, KiB, MiB, GiB, TiB (or k, m, g, t; or KB, MB, GB)",
                    crate::error::excerpt(other)
                )));
            }
        };
        let bytes = value * mult as f64;
        if !bytes.is_finite() || bytes > MAX_BYTES as f64 {
            return Err(unit_err(format!(
                "size `{shown}` is absurd (over 1 PiB); check the unit"
            )));
        }
        Ok(Bytes(bytes.round() as u64))
    }
}

impl fmt::Display for Bytes {
    /// The largest binary unit that divides the size exactly, else MiB with
    /// two decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, name) in [
            (Self::GIB * 1024, "TiB"),
            (Self::GIB, "GiB"),
            (Self::MIB, "MiB"),
            (Self::KIB, "KiB"),
        ] {
            if b >= unit && b.is_multiple_of(unit) {
                return write!(f, "{}{}", b / unit, name);
            }
        }
        if b >= Self::MIB {
            write!(f, "{:.2}MiB", self.as_mib_f64())
        } else {
            write!(f, "{b}B")
        }
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = NumOrStr::deserialize(d)?;
        match raw {
            NumOrStr::Int(i) if i < 0 => Err(serde::de::Error::custom(format!(
                "size `{i}` is negative; sizes must be positive"
            ))),
            NumOrStr::Int(i) => format!("{i}").parse().map_err(serde::de::Error::custom),
            NumOrStr::Float(x) => format!("{x}").parse().map_err(serde::de::Error::custom),
            NumOrStr::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumOrStr {
    Int(i64),
    Float(f64),
    Str(String),
}

/// A share of something, written `50%`; stored as a fraction in (0, 10].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Share(pub f64);

impl Share {
    pub(crate) fn fraction(self) -> f64 {
        self.0
    }
    pub fn of(self, b: Bytes) -> Bytes {
        Bytes((b.0 as f64 * self.0).floor() as u64)
    }
}

impl FromStr for Share {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let shown = crate::error::excerpt(t);
        let Some(num) = t.strip_suffix('%') else {
            return Err(unit_err(format!(
                "`{shown}` is not a share; write e.g. `50%`"
            )));
        };
        let v: f64 = num
            .trim()
            .parse()
            .map_err(|_| unit_err(format!("`{shown}` is not a share; write e.g. `50%`")))?;
        if !(v > 0.0 && v <= 1000.0) {
            return Err(unit_err(format!(
                "share `{shown}` must be above 0% and at most 1000%"
            )));
        }
        Ok(Share(v / 100.0))
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = self.0 * 100.0;
        if (pct - pct.round()).abs() < 1e-9 {
            write!(f, "{}%", pct.round() as i64)
        } else {
            write!(f, "{pct}%")
        }
    }
}

impl Serialize for Share {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Share {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A size given either absolutely (`12GiB`) or as a share of a base (`50%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeOrShare {
    Absolute(Bytes),
    Share(Share),
}

impl SizeOrShare {
    /// Resolve against the base the share refers to.
    pub fn resolve(self, base: Bytes) -> Bytes {
        match self {
            SizeOrShare::Absolute(b) => b,
            SizeOrShare::Share(s) => s.of(base),
        }
    }
}

impl FromStr for SizeOrShare {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().ends_with('%') {
            Ok(SizeOrShare::Share(s.parse()?))
        } else {
            Ok(SizeOrShare::Absolute(s.parse()?))
        }
    }
}

impl fmt::Display for SizeOrShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeOrShare::Absolute(b) => b.fmt(f),
            SizeOrShare::Share(s) => s.fmt(f),
        }
    }
}

impl Serialize for SizeOrShare {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for SizeOrShare {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumOrStr::deserialize(d)? {
            NumOrStr::Str(s) => s.parse().map_err(serde::de::Error::custom),
            NumOrStr::Int(i) if i < 0 => Err(serde::de::Error::custom(format!(
                "size `{i}` is negative; sizes must be positive"
            ))),
            NumOrStr::Int(i) => Ok(SizeOrShare::Absolute(
                format!("{i}").parse().map_err(serde::de::Error::custom)?,
            )),
            NumOrStr::Float(x) => Ok(SizeOrShare::Absolute(
                format!("{x}").parse().map_err(serde::de::Error::custom)?,
            )),
        }
    }
}

/// A duration written with a unit: `250ms`, `1s`, `5m`, `2h`, `1.5s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub fn from_secs(s: u64) -> Self {
        Duration(std::time::Duration::from_secs(s))
    }
    pub fn std(self) -> std::time::Duration {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl FromStr for Duration {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let shown = crate::error::excerpt(t);
        if t.starts_with('-') {
            return Err(unit_err(format!(
                "duration `{shown}` is negative; durations must be positive"
            )));
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let v: f64 = num.parse().map_err(|_| {
            unit_err(format!(
                "`{shown}` is not a duration; write e.g. `500ms`, `1s`, `5m` or `2h`"
            ))
        })?;
        let secs = match unit.trim() {
            "us" | "µs" => v / 1_000_000.0,
            "ms" => v / 1000.0,
            "s" | "sec" => v,
            "m" | "min" => v * 60.0,
            "h" => v * 3600.0,
            "" => {
                return Err(unit_err(format!(
                    "duration `{shown}` has no unit; write `{shown}s` for seconds (or ms, m, h)"
                )));
            }
            other => {
                return Err(unit_err(format!(
                    "unknown duration unit `{}` in `{shown}`; use us, ms, s, m or h",
                    crate::error::excerpt(other)
                )));
            }
        };
        if !secs.is_finite() || secs > 30.0 * 24.0 * 3600.0 {
            return Err(unit_err(format!(
                "duration `{shown}` is absurd (over 30 days); check the unit"
            )));
        }
        Ok(Duration(std::time::Duration::from_secs_f64(secs)))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        let us = self.0.as_micros();
        if !us.is_multiple_of(1000) {
            write!(f, "{us}us")
        } else if ms.is_multiple_of(3_600_000) && ms > 0 {
            write!(f, "{}h", ms / 3_600_000)
        } else if ms.is_multiple_of(60_000) && ms > 0 {
            write!(f, "{}m", ms / 60_000)
        } else if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumOrStr::deserialize(d)? {
            NumOrStr::Str(s) => s.parse().map_err(serde::de::Error::custom),
            NumOrStr::Int(i) => format!("{i}").parse().map_err(serde::de::Error::custom),
            NumOrStr::Float(x) => format!("{x}").parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A link rate in bits per second, written as `tc` writes it: `10gbit`,
/// `100mbit`, `512kbit`, `9600bit` (decimal multiples, as tc's). Zero and
/// absurd rates (over 1 Tbit/s) are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

impl Rate {
    /// At most 1 Tbit/s: anything faster is a typo.
    pub(crate) const MAX_BITS: u64 = 1_000_000_000_000;

    pub fn from_bits_per_sec(bits: u64) -> Self {
        Rate(bits.clamp(1, Self::MAX_BITS))
    }
    pub(crate) fn bits_per_sec(self) -> u64 {
        self.0
    }
    pub(crate) fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
    /// How long `bytes` take on a link of this rate.
    pub(crate) fn time_for(self, bytes: usize) -> std::time::Duration {
        std::time::Duration::from_secs_f64(bytes as f64 * 8.0 / self.0 as f64)
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let shown = crate::error::excerpt(t);
        let hint = "write e.g. `10gbit`, `100mbit` or `512kbit`";
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let v: f64 = num
            .parse()
            .map_err(|_| unit_err(format!("`{shown}` is not a rate; {hint}")))?;
        let per = match unit.trim().to_ascii_lowercase().as_str() {
            "bit" => 1.0,
            "kbit" => 1e3,
            "mbit" => 1e6,
            "gbit" => 1e9,
            "tbit" => 1e12,
            "" => return Err(unit_err(format!("rate `{shown}` has no unit; {hint}"))),
            other => {
                return Err(unit_err(format!(
                    "unknown rate unit `{}` in `{shown}`; use bit, kbit, mbit or gbit (bits per second, as tc)",
                    crate::error::excerpt(other)
                )));
            }
        };
        let bits = v * per;
        if bits.is_nan() || bits < 1.0 {
            return Err(unit_err(format!("rate `{shown}` must be at least 1bit")));
        }
        if bits > Self::MAX_BITS as f64 {
            return Err(unit_err(format!(
                "rate `{shown}` is absurd (over 1tbit); check the unit"
            )));
        }
        Ok(Rate(bits.round() as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (per, unit) in [
            (1_000_000_000_000, "tbit"),
            (1_000_000_000, "gbit"),
            (1_000_000, "mbit"),
            (1000, "kbit"),
        ] {
            if self.0 >= per && self.0.is_multiple_of(per) {
                return write!(f, "{}{unit}", self.0 / per);
            }
        }
        write!(f, "{}bit", self.0)
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// Largest CPU number accepted in a set (Linux's NR_CPUS default is 8192).
pub(crate) const MAX_CPU: u32 = 8191;

/// A set of CPU numbers in the kernel's list syntax: `2`, `0-3`, `0-3,6`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct CpuSet(BTreeSet<u32>);

impl CpuSet {
    pub fn new(cpus: impl IntoIterator<Item = u32>) -> Self {
        CpuSet(cpus.into_iter().collect())
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }
    pub(crate) fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }
    pub(crate) fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }
    /// The kernel list form, ranges collapsed: `0-3,6`.
    pub fn to_list(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut iter = self.0.iter().copied().peekable();
        while let Some(start) = iter.next() {
            let mut end = start;
            while iter.peek() == Some(&(end + 1)) {
                end = iter.next().unwrap();
            }
            out.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
        }
        out.join(",")
    }
}

impl FromStr for CpuSet {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let shown = crate::error::excerpt(t);
        if t.is_empty() {
            return Err(unit_err("empty CPU set; write e.g. `0`, `0-3` or `0-3,6`"));
        }
        let mut set = BTreeSet::new();
        for part in t.split(',') {
            let part = part.trim();
            let bad = || {
                unit_err(format!(
                    "`{shown}` is not a CPU set; write CPU numbers and ranges like `0-3,6`"
                ))
            };
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (
                    a.trim().parse::<u32>().map_err(|_| bad())?,
                    b.trim().parse::<u32>().map_err(|_| bad())?,
                ),
                None => {
                    let v = part.parse::<u32>().map_err(|_| bad())?;
                    (v, v)
                }
            };
            if lo > hi {
                return Err(unit_err(format!(
                    "CPU range `{part}` in `{shown}` runs backwards; write `{hi}-{lo}`"
                )));
            }
            if hi > MAX_CPU {
                return Err(unit_err(format!(
                    "CPU {hi} in `{shown}` is beyond any host (max {MAX_CPU})"
                )));
            }
            set.extend(lo..=hi);
        }
        Ok(CpuSet(set))
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumOrStr::deserialize(d)? {
            NumOrStr::Str(s) => s.parse().map_err(serde::de::Error::custom),
            NumOrStr::Int(i) if i < 0 => Err(serde::de::Error::custom(format!(
                "CPU number `{i}` is negative"
            ))),
            NumOrStr::Int(i) => format!("{i}").parse().map_err(serde::de::Error::custom),
            NumOrStr::Float(x) => Err(serde::de::Error::custom(format!(
                "`{x}` is not a CPU set; write CPU numbers and ranges like `0-3,6`"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_every_documented_form() {
        assert_eq!("512MiB".parse::<Bytes>().unwrap(), Bytes::from_mib(512));
        assert_eq!("1GiB".parse::<Bytes>().unwrap(), Bytes::from_gib(1));
        assert_eq!("12g".parse::<Bytes>().unwrap(), Bytes::from_gib(12));
        assert_eq!("1048576".parse::<Bytes>().unwrap(), Bytes::from_mib(1));
        assert_eq!(
            "1.5GiB".parse::<Bytes>().unwrap(),
            Bytes(3 * Bytes::GIB / 2)
        );
        assert_eq!("2GB".parse::<Bytes>().unwrap(), Bytes(2_000_000_000));
    }

    #[test]
    fn negative_empty_absurd_and_unknown_sizes_are_refused() {
        assert!("-1GiB".parse::<Bytes>().unwrap_err().0.contains("negative"));
        assert!("".parse::<Bytes>().is_err());
        assert!(
            "9999999TiB"
                .parse::<Bytes>()
                .unwrap_err()
                .0
                .contains("absurd")
        );
        assert!(
            "12furlongs"
                .parse::<Bytes>()
                .unwrap_err()
                .0
                .contains("unit")
        );
    }

    #[test]
    fn sizes_display_in_the_largest_exact_unit() {
        assert_eq!(Bytes::from_gib(12).to_string(), "12GiB");
        assert_eq!(Bytes::from_mib(1536).to_string(), "1536MiB");
        assert_eq!(Bytes(100).to_string(), "100B");
    }

    #[test]
    fn scaling_keeps_whole_mebibytes() {
        assert_eq!(Bytes::from_gib(16).scaled(0.125), Bytes::from_gib(2));
        assert_eq!(Bytes::from_gib(1).scaled(0.3).0 % Bytes::MIB, 0);
    }

    #[test]
    fn shares_resolve_against_their_base() {
        let s: SizeOrShare = "50%".parse().unwrap();
        assert_eq!(s.resolve(Bytes::from_gib(2)), Bytes::from_gib(1));
        let a: SizeOrShare = "12g".parse().unwrap();
        assert_eq!(a.resolve(Bytes::from_gib(2)), Bytes::from_gib(12));
        assert!("0%".parse::<Share>().is_err());
    }

    #[test]
    fn durations_need_a_unit() {
        assert_eq!("1s".parse::<Duration>().unwrap(), Duration::from_secs(1));
        assert_eq!("5m".parse::<Duration>().unwrap(), Duration::from_secs(300));
        assert_eq!(
            "250ms".parse::<Duration>().unwrap().std(),
            std::time::Duration::from_millis(250)
        );
        assert!("5".parse::<Duration>().unwrap_err().0.contains("no unit"));
        assert!("-1s".parse::<Duration>().is_err());
    }

    #[test]
    fn durations_below_a_millisecond_keep_their_microseconds() {
        let d: Duration = "100us".parse().unwrap();
        assert_eq!(d.std(), std::time::Duration::from_micros(100));
        assert_eq!(d.to_string(), "100us");
        assert_eq!("1500us".parse::<Duration>().unwrap().to_string(), "1500us");
        assert_eq!("2ms".parse::<Duration>().unwrap().to_string(), "2ms");
    }

    #[test]
    fn rates_read_as_tc_writes_them() {
        let r: Rate = "10gbit".parse().unwrap();
        assert_eq!(r.bits_per_sec(), 10_000_000_000);
        assert_eq!(r.to_string(), "10gbit");
        assert_eq!("1.5mbit".parse::<Rate>().unwrap().to_string(), "1500kbit");
        assert_eq!(
            "10mbit".parse::<Rate>().unwrap().time_for(1250),
            std::time::Duration::from_millis(1)
        );
        assert!("10".parse::<Rate>().unwrap_err().0.contains("no unit"));
        assert!(
            "10MB"
                .parse::<Rate>()
                .unwrap_err()
                .0
                .contains("bits per second")
        );
        assert!("0bit".parse::<Rate>().is_err());
        assert!("5tbit".parse::<Rate>().unwrap_err().0.contains("absurd"));
    }

    #[test]
    fn cpu_sets_parse_and_print_in_kernel_list_form() {
        let c: CpuSet = "0-3,6".parse().unwrap();
        assert_eq!(c.len(), 5);
        assert_eq!(c.to_list(), "0-3,6");
        assert_eq!("2".parse::<CpuSet>().unwrap().to_list(), "2");
        assert!("3-1".parse::<CpuSet>().unwrap_err().0.contains("backwards"));
        assert!("a-b".parse::<CpuSet>().is_err());
    }

    #[test]
    fn yaml_integers_and_strings_both_deserialize() {
        let c: CpuSet = serde_yaml::from_str("2").unwrap();
        assert_eq!(c.to_list(), "2");
        let b: Bytes = serde_yaml::from_str("1024").unwrap();
        assert_eq!(b, Bytes(1024));
        let e = serde_yaml::from_str::<Bytes>("-5").unwrap_err().to_string();
        assert!(e.contains("negative"), "{e}");
    }
}

//! Number formatting shared by tables and chart axes: deterministic, with
//! units, readable at a glance.

/// What a table shows for a value that is not known or not a result.
pub(crate) const DASH: &str = "—";

/// `format` of a value that may be missing; [`DASH`] when it is.
pub(crate) fn or_dash<T>(v: Option<T>, format: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| DASH.into(), format)
}

/// Operations per second in a table: `12,345`, `98.5`, `0.42`.
pub fn ops(v: f64) -> String {
    if !v.is_finite() {
        return DASH.into();
    }
    if v.abs() >= 100.0 {
        thousands(v.round() as i64)
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A small count per unit (faults per operation): three significant
/// digits below 100, `0` for zero: `0.0123`, `1.25`, `42.5`, `1,234`.
pub fn small(v: f64) -> String {
    if !v.is_finite() {
        return DASH.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    if v.abs() >= 100.0 {
        return thousands(v.round() as i64);
    }
    let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

/// An integer with thousands separators: `1,234,567`.
pub(crate) fn thousands(v: i64) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 { format!("-{out}") } else { out }
}

/// A number in compact form for axes: `950`, `12k`, `1.5M`, `0.25`.
pub(crate) fn compact(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", trim_float(x))
}

/// A float with at most 3 significant decimals and no trailing zeros.
pub(crate) fn trim_float(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let decimals = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else if x.abs() >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// [`ms`] of a value a tool may not have reported; `—` when it did not.
pub(crate) fn ms_or_dash(us: Option<f64>) -> String {
    or_dash(us, ms)
}

/// Latency given in microseconds, shown in milliseconds for a table column:
/// `0.045`, `1.23`, `12.3`, `123`.
pub fn ms(us: f64) -> String {
    if !us.is_finite() {
        return DASH.into();
    }
    let m = us / 1000.0;
    if m >= 100.0 {
        thousands(m.round() as i64)
    } else if m >= 10.0 {
        format!("{m:.1}")
    } else if m >= 1.0 {
        format!("{m:.2}")
    } else {
        format!("{m:.3}")
    }
}

/// Latency given in microseconds with its own unit, for axes: `850µs`, `1.2ms`, `3s`.
pub(crate) fn micros(us: f64) -> String {
    if us >= 1e6 {
        format!("{}s", trim_float(us / 1e6))
    } else if us >= 1e3 {
        format!("{}ms", trim_float(us / 1e3))
    } else {
        format!("{}µs", trim_float(us))
    }
}

/// Bytes with a binary unit: `512 MiB`, `1.5 GiB`.
pub fn bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", trim_float(v), UNITS[i])
}

/// A byte count that may be missing, with a binary unit; `—` when it is.
pub(crate) fn bytes_or_dash(b: Option<u64>) -> String {
    or_dash(b, |b| bytes(b as f64))
}

/// A byte rate: `12 MiB/s`.
pub(crate) fn bytes_per_sec(b: f64) -> String {
    format!("{}/s", bytes(b))
}

/// A memory-to-data ratio: `0.25×`, `2×`.
pub fn ratio(r: f64) -> String {
    format!("{}×", trim_float(r))
}

/// A relative change as a signed percentage: `+4.2%`, `-10.0%`.
pub fn percent(frac: f64) -> String {
    if !frac.is_finite() {
        return DASH.into();
    }
    format!("{:+.1}%", frac * 100.0)
}

/// An RFC 3339 time to the second, for people: `2026-11-30 05:37:58 UTC`
/// (other offsets are kept as written).
pub(crate) fn timestamp(rfc3339: &str) -> String {
    if rfc3339.len() < 19 || !rfc3339.is_char_boundary(19) {
        return rfc3339.to_string();
    }
    let (head, rest) = rfc3339.split_at(19);
    let offset = rest.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let zone = match offset {
        "Z" | "+00:00" => " UTC".to_string(),
        "" => String::new(),
        other => format!(" {other}"),
    };
    format!("{}{zone}", head.replacen('T', " ", 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(ops(12345.4), "12,345");
        assert_eq!(ops(98.54), "98.5");
        assert_eq!(thousands(-1234567), "-1,234,567");
        assert_eq!(small(0.012345), "0.0123");
        assert_eq!(small(1.254), "1.25");
        assert_eq!(small(42.46), "42.5");
        assert_eq!(small(1234.4), "1,234");
        assert_eq!(small(0.0), "0");
        assert_eq!(compact(1500.0), "1.5k");
        assert_eq!(compact(2_000_000.0), "2M");
        assert_eq!(ms(45.0), "0.045");
        assert_eq!(ms(1234.0), "1.23");
        assert_eq!(micros(850.0), "850µs");
        assert_eq!(micros(1200.0), "1.2ms");
        assert_eq!(bytes(1.5 * 1024.0 * 1024.0 * 1024.0), "1.5 GiB");
        assert_eq!(bytes_per_sec(2048.0), "2 KiB/s");
        assert_eq!(bytes_or_dash(Some(1024)), "1 KiB");
        assert_eq!(bytes_or_dash(None), "—");
        assert_eq!(ms_or_dash(None), "—");
        assert_eq!(ratio(0.25), "0.25×");
        assert_eq!(percent(-0.1), "-10.0%");
        assert_eq!(
            timestamp("2026-11-30T05:37:58.104839928+00:00"),
            "2026-11-30 05:37:58 UTC"
        );
        assert_eq!(
            timestamp("2026-11-30T05:37:58+02:00"),
            "2026-11-30 05:37:58 +02:00"
        );
    }
}

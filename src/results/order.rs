//! The order people read labels in: numbers by value, not by text. Caps
//! come by size (`mem25pct` < `mem100pct`, `512MiB` < `1GiB`), versions by
//! version (`9.6` < `10` < `15`, `6.2.5` < `7.0` < `8.2.3`), thread counts
//! by number. Every report sorts its cells, series and legends with it.

use std::cmp::Ordering;

/// One piece of a label: a number (scaled by its size unit, if any) or text.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Token {
    /// Numbers sort before text, as `9.6` before `9.x`.
    Num(u128),
    Text(String),
}

/// The multiplier of a size unit written right after a number (`16g`,
/// `512MiB`, `4KB`); `None` for anything else (`pct`, `threads`, `c`).
fn size_unit(word: &str) -> Option<u128> {
    let w = word.to_ascii_lowercase();
    let power = match w.as_str() {
        "k" | "kb" | "kib" => 1,
        "m" | "mb" | "mib" => 2,
        "g" | "gb" | "gib" => 3,
        "t" | "tb" | "tib" => 4,
        _ => return None,
    };
    Some(1024u128.pow(power))
}

fn tokens(s: &str) -> Vec<Token> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            // Longer than u128: compare what fits; such labels are not numbers.
            let mut n: u128 = digits.parse().unwrap_or(u128::MAX);
            let word_end = chars[i..]
                .iter()
                .position(|c| !c.is_ascii_alphabetic())
                .map_or(chars.len(), |p| i + p);
            let word: String = chars[i..word_end].iter().collect();
            if let Some(scale) = size_unit(&word) {
                n = n.saturating_mul(scale);
                i = word_end;
            }
            out.push(Token::Num(n));
        } else {
            let start = i;
            while i < chars.len() && !chars[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Token::Text(chars[start..i].iter().collect()));
        }
    }
    out
}

/// Compare two labels with their numbers by value; labels equal in value
/// (`07` and `7`) fall back to text order, so the order is total.
pub(crate) fn natural_cmp(a: &str, b: &str) -> Ordering {
    tokens(a).cmp(&tokens(b)).then_with(|| a.cmp(b))
}

/// A string key that sorts in `natural_cmp` order (for `BTreeMap`s of
/// series, environments and versions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Natural(pub String);

impl Ord for Natural {
    fn cmp(&self, other: &Self) -> Ordering {
        natural_cmp(&self.0, &other.0)
    }
}

impl PartialOrd for Natural {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl From<&str> for Natural {
    fn from(s: &str) -> Self {
        Natural(s.to_string())
    }
}

impl From<String> for Natural {
    fn from(s: String) -> Self {
        Natural(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut v: Vec<&str>) -> Vec<&str> {
        v.sort_by(|a, b| natural_cmp(a, b));
        v
    }

    #[test]
    fn versions_sort_by_version_not_by_text() {
        assert_eq!(sorted(vec!["15", "9.6", "10"]), ["9.6", "10", "15"]);
        assert_eq!(
            sorted(vec!["8.2.3", "7.0", "6.2.5"]),
            ["6.2.5", "7.0", "8.2.3"]
        );
        assert_eq!(
            sorted(vec!["postgres@15", "postgres@9.6", "postgres@10"]),
            ["postgres@9.6", "postgres@10", "postgres@15"]
        );
        assert_eq!(sorted(vec!["10.11", "10.9"]), ["10.9", "10.11"]);
    }

    #[test]
    fn caps_sort_by_size_and_thread_counts_by_number() {
        assert_eq!(
            sorted(vec![
                "ram-sweep-mem100pct",
                "ram-sweep-mem200pct",
                "ram-sweep-mem25pct",
                "ram-sweep-mem50pct"
            ]),
            [
                "ram-sweep-mem25pct",
                "ram-sweep-mem50pct",
                "ram-sweep-mem100pct",
                "ram-sweep-mem200pct"
            ]
        );
        assert_eq!(
            sorted(vec!["small-1g", "small-512m", "small-2GiB"]),
            ["small-512m", "small-1g", "small-2GiB"]
        );
        assert_eq!(
            sorted(vec!["16 threads", "4 threads", "256 threads"]),
            ["4 threads", "16 threads", "256 threads"]
        );
        // Words that are not size units stay words.
        assert_eq!(sorted(vec!["c8-32g", "c4-16g"]), ["c4-16g", "c8-32g"]);
    }

    #[test]
    fn the_order_is_total_and_agrees_with_equality() {
        assert_eq!(natural_cmp("a07", "a7"), "a07".cmp("a7"));
        assert_eq!(natural_cmp("x", "x"), Ordering::Equal);
        let huge = "9".repeat(60);
        assert_eq!(natural_cmp(&huge, "1"), Ordering::Greater);
    }
}

//! Settle: between load and the measured phases, optionally shrink the
//! server's memory cap to a share of the measured data size, and drop the
//! page cache the load left behind so that phases start cold. The sizes
//! are worked out here; the sandbox sets the cap and drops the cache
//! ([`crate::sandbox::Sandbox::set_memory_cap`]).

use crate::model::SettleMemory;
use crate::units::{Bytes, Share};

/// The smallest cap settle will set: below this an engine cannot even keep
/// its own code and stacks resident, and the cell would measure the OOM killer.
const MIN_SETTLED_CAP: Bytes = Bytes(32 << 20);

/// The cap for `memory: <share> of data`, never below [`MIN_SETTLED_CAP`],
/// rounded down to a page (the kernel would round it anyway, and the read-back
/// check compares exact values).
pub(crate) fn settled_cap(share: Share, data_size: Bytes) -> Bytes {
    let raw = share.of(data_size).as_u64().max(MIN_SETTLED_CAP.as_u64());
    Bytes(raw / 4096 * 4096)
}

/// The cap `memory` makes of `data` bytes measured after the load, and why
/// in words (`25% of data 1.2GiB`, `absolute`).
pub(crate) fn cap_for(memory: SettleMemory, data: u64) -> (Bytes, String) {
    match memory {
        SettleMemory::OfData(f) => (
            settled_cap(Share(f), Bytes(data)),
            format!("{} of data {}", Share(f), Bytes(data)),
        ),
        SettleMemory::Absolute(b) => (b, "absolute".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quarter_of_the_data_is_a_quarter_rounded_to_a_page() {
        let share = Share(0.25);
        let cap = settled_cap(share, Bytes(Bytes::from_mib(400).0 + 3));
        assert_eq!(cap, Bytes::from_mib(100));
        let twice = settled_cap(Share(2.0), Bytes::from_mib(400));
        assert_eq!(twice, Bytes::from_mib(800));
    }

    #[test]
    fn a_tiny_data_set_never_gets_a_cap_below_the_floor() {
        let share = Share(0.25);
        assert_eq!(settled_cap(share, Bytes::from_mib(1)), MIN_SETTLED_CAP);
    }
}

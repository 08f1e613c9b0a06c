//! Plans on a host of a write-up's size, the same on every machine, so
//! that a faithful scenario plans at scale 1 here.

use benchcage::host::HostFacts;
use benchcage::units::{Bytes, CpuSet};

/// A host big enough for every shipped scenario: 64 CPUs, 512 GiB,
/// transparent huge pages unknown, no netem (a network's `auto` is the
/// proxy).
pub fn big_host() -> HostFacts {
    let mut host = HostFacts::probe();
    host.online_cpus = CpuSet::new(0..64);
    host.mem_total = Bytes::from_gib(512);
    host.mem_available = Bytes::from_gib(500);
    host.swap_total = Bytes::from_gib(16);
    host.swap_accounting = true;
    host.work_free = Some(Bytes::from_gib(64 * 1024));
    host.work_free_set = Some("64TiB".into());
    host.open_files = 1 << 20;
    host.thp = Ok(None);
    host.netem = false;
    host
}

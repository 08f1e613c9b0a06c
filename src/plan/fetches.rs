//! The engine versions a plan runs that the fetch cache does not hold
//! yet: what `plan` lists and `run` fetches (or refuses without `--fetch`).

use crate::fetch::{Pending, Source, cache};
use crate::plan::PlannedCell;
use crate::spec::Project;
use std::path::Path;

/// The fetched versions that cells on the cgroup backend run and the cache
/// under `root` does not hold, each once, in cell order.
pub(crate) fn pending(project: &Project, cells: &[PlannedCell], root: &Path) -> Vec<Pending> {
    let mut out: Vec<Pending> = Vec::new();
    for c in cells {
        if !matches!(c.program, crate::model::Program::Binary(_)) {
            continue;
        }
        let ev = project
            .engines
            .get(&c.engine)
            .and_then(|e| e.version(Some(&c.version)))
            .map(|(_, ev)| ev);
        let Some(source) = ev
            .and_then(|ev| ev.source.clone())
            .filter(Source::fetchable)
        else {
            continue;
        };
        let p = Pending {
            engine: c.engine.clone(),
            version: c.version.clone(),
            source,
            binary: ev.and_then(|ev| ev.binary.clone()),
        };
        let whole = cache::usable(root, &p.engine, &p.version, &p.source, p.binary.as_deref());
        if whole.is_none() && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

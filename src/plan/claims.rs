//! The write-up's claims (`reproduces.claims`) resolved against the
//! matrix: each side becomes the cell labels of the entries that play it,
//! so that a run can find its cells (`claims::evaluate`).

use crate::model::claim::{Claim, Side};
use crate::spec::Project;
use crate::spec::claims::{ClaimSpec, side_entries};
use crate::spec::scenario::{EngineRef, Scenario};
use crate::spec::writeup::Reproduces;

/// The claims of scenario `s`, resolved; none when it reproduces nothing.
/// A side that names nothing in the matrix (validation refuses it) has no
/// entries, and a run says it was not measured.
pub(super) fn resolve(project: &Project, s: &Scenario) -> Vec<Claim> {
    let Some(r) = &s.reproduces else {
        return Vec::new();
    };
    r.claims.iter().map(|c| claim(project, r, s, c)).collect()
}

/// The label of an entry's cells: its own, else `engine@version` with the
/// version resolved.
fn cell_label(project: &Project, e: &EngineRef) -> String {
    if let Some(l) = &e.label {
        return l.clone();
    }
    match project
        .engines
        .get(&e.engine)
        .and_then(|en| en.version(e.version.as_deref()))
    {
        Some((v, _)) => format!("{}@{v}", e.engine),
        None => e.label(),
    }
}

fn side(project: &Project, r: &Reproduces, s: &Scenario, name: &str) -> Side {
    let entries = side_entries(r, s, name)
        .unwrap_or_default()
        .into_iter()
        .map(|e| cell_label(project, e))
        .collect();
    Side {
        name: name.to_string(),
        entries,
    }
}

fn claim(project: &Project, r: &Reproduces, s: &Scenario, c: &ClaimSpec) -> Claim {
    Claim {
        id: c.id.clone(),
        says: c.says.clone(),
        metric: c.metric,
        phase: c.phase.clone(),
        op: c.op.clone(),
        threads: c.threads,
        environment: c.environment.clone(),
        a: side(project, r, s, &c.a),
        b: side(project, r, s, &c.b),
        published: c.published,
        expect: c.expect,
        stands_for: c.stands_for.clone(),
    }
}

//! A cell's knobs, layered from their sources (last wins): the engine's
//! defaults, the cache the environment gives, the scenario's `knobs:`, the
//! matrix entry's `knobs:`, then `--set`. Each is parsed by its type,
//! checked against the knobs it conflicts with, and the cache is rounded to
//! what the engine version takes. The store URL options knobs set
//! (`write_concern` gives `w=`) are checked as the load generator reads them.

use super::overrides::{Sets, set_flag};
use super::{Entry, StoreOption};
use crate::spec::Scenario;
use crate::spec::default_cache;
use crate::spec::diag::{Diagnostic, Diagnostics, unknown_hint};
use crate::spec::engine::{Engine, KnobValue};
use crate::spec::environment::{CacheChoice, DEFAULT_CACHE_SHARE};
use crate::units::{Bytes, Share};
use std::collections::BTreeMap;

/// Where a knob's value came from.
#[derive(Debug, Clone)]
enum Source {
    /// The engine's `default:`.
    Default,
    /// The environment's cache (`cache_size`), by environment name.
    Environment(String),
    /// A field of the scenario (`knobs.sync_period`,
    /// `matrix.engines[1].knobs.compression`).
    Scenario(String),
    /// `--set KEY=VALUE`.
    Flag,
}

/// A knob's value as written, and where.
struct Layer {
    value: String,
    from: Source,
}

/// A cell's knobs, resolved.
pub(super) struct Knobs {
    pub typed: BTreeMap<String, KnobValue>,
    pub store_options: Vec<StoreOption>,
    /// The engine cache (`cache_size`, or the environment's cache when the
    /// engine has no such knob), rounded as the engine takes it.
    pub cache: Bytes,
    /// Whether the cell's engine version has a `cache_size` knob.
    pub has_cache_knob: bool,
    /// Where the cache comes from when the cell does not set it: the page
    /// cache under the cap (MMAPv1), or the engine's own default.
    pub cache_from: Option<String>,
    /// The engine sizes its own cache (`cache: default`): what it takes is
    /// the condition measured, not a cache over the cap.
    pub engine_default_cache: bool,
    /// Knobs raised for the scenario's thread count, each as
    /// `max_connections=1074: 1 per thread x 1024 threads + 50 spare`.
    pub raised: Vec<String>,
}

/// Canonical text of typed knobs.
fn canonical(typed: &BTreeMap<String, KnobValue>) -> BTreeMap<String, String> {
    typed
        .iter()
        .map(|(k, v)| (k.clone(), v.canonical()))
        .collect()
}

impl Knobs {
    /// Canonical text of each knob, as cells and records show them.
    pub(crate) fn canonical(&self) -> BTreeMap<String, String> {
        self.typed
            .iter()
            .map(|(k, v)| (k.clone(), v.canonical()))
            .collect()
    }
}

impl Layer {
    /// A diagnostic at the place this value was written.
    fn diag(&self, key: &str, s: &Scenario, e: &Engine, msg: String) -> Diagnostic {
        self.diag_hint(key, s, e, msg, None)
    }

    fn diag_hint(
        &self,
        key: &str,
        s: &Scenario,
        e: &Engine,
        msg: String,
        hint: Option<String>,
    ) -> Diagnostic {
        match &self.from {
            Source::Flag => set_flag(key, &self.value, msg, hint),
            Source::Default => e.origin.diag(&format!("knobs.{key}.default"), msg, hint),
            Source::Environment(env) => s.origin.diag(&format!("environment {env}"), msg, hint),
            Source::Scenario(field) => s.origin.diag(field, msg, hint),
        }
    }
}

/// Resolve the entry's knobs over the memory a cell may use (`effective`);
/// `None` when one is refused (the diagnostics say why). A cache the
/// engine rounds is a deviation.
pub(super) fn resolve(
    e: &Entry,
    sets: &Sets,
    effective: Bytes,
    host_ram: Bytes,
    deviations: &mut Vec<String>,
    diags: &mut Diagnostics,
) -> Option<Knobs> {
    let s = sets.scenario();
    let env_cache = match e.ep.env.cache {
        Some(c) => c.resolve(effective),
        None => Share(DEFAULT_CACHE_SHARE).of(effective),
    };
    let engine_has_cache_knob = e.engine.knobs.contains_key("cache_size");
    let engine_default = e.ep.env.cache_choice == CacheChoice::EngineDefault;
    let raw = layers(
        e,
        sets,
        (engine_has_cache_knob && !engine_default).then_some(env_cache),
    );
    let mut typed = parse(e, s, &raw, diags)?;
    by_version(e, s, &raw, &mut typed, diags)?;
    // A version or storage engine without a cache of its own (MMAPv1) has
    // the page cache under the cap as its cache.
    let has_cache_knob = typed.contains_key("cache_size");
    let raised = grow_per_thread(e, s, &raw, &mut typed, diags)?;
    let store_options = match store_options_of(e.engine, &typed) {
        Ok(o) => o,
        Err((k, msg)) => {
            diags.push(raw[&k].diag(&k, s, e.engine, format!("{}: {msg}", e.label)));
            return None;
        }
    };
    let mut cache = match typed.get("cache_size") {
        Some(KnobValue::Size(b)) => *b,
        _ => env_cache,
    };
    let mut cache_from = None;
    let canon = canonical(&typed);
    let version_has_cache = e.engine.knobs.get("cache_size").is_some_and(|k| {
        k.versions.version_lacks(e.version).is_none() && k.versions.when_lacks(&canon).is_none()
    });
    let defaulted = engine_default && version_has_cache && !has_cache_knob;
    let rule = defaulted
        .then(|| default_cache::rule_for(&e.engine.default_cache, e.version, &canon))
        .flatten();
    if let Some(rule) = rule {
        let chosen = rule.choose(&e.label, e.ep.env.memory, host_ram);
        cache = chosen.bytes;
        cache_from = Some(chosen.text);
    } else if defaulted {
        diags.push(e.ep.diag(
            s,
            "cache",
            format!(
                "{}: `cache: default` leaves the cache to the engine, but {} documents no default cache for this version",
                e.label, e.engine.origin.file
            ),
            Some("give the environment a cache (a size or a share of the cap), or add the version's rule to the engine's `default_cache:`".into()),
        ));
        return None;
    } else if engine_has_cache_knob && !version_has_cache {
        cache = effective;
        cache_from = Some(format!(
            "the page cache under the {effective} cap: {}{} has no cache of its own",
            e.label,
            typed
                .get("storage_engine")
                .map(|v| format!(" ({})", v.canonical()))
                .unwrap_or_default()
        ));
    }
    if has_cache_knob && let Some(got) = round_cache(e, s, cache, deviations, diags)? {
        cache = got;
        typed.insert("cache_size".into(), KnobValue::Size(got));
    }
    Some(Knobs {
        typed,
        store_options,
        cache,
        has_cache_knob,
        cache_from,
        engine_default_cache: rule.is_some(),
        raised,
    })
}

/// The knobs as the cell's version has them: its own defaults
/// (`default_before`), and without the knobs and values it lacks (`from`,
/// `before`, `values_from`, `values_before`, `when`): a default or the
/// environment's cache is left out, a value a scenario or `--set` gave is
/// refused naming the version.
fn by_version(
    e: &Entry,
    s: &Scenario,
    raw: &BTreeMap<String, Layer>,
    typed: &mut BTreeMap<String, KnobValue>,
    diags: &mut Diagnostics,
) -> Option<()> {
    for (k, knob) in &e.engine.knobs {
        let Some(d) = knob.versions.default_of(e.version) else {
            continue;
        };
        if raw
            .get(k)
            .is_some_and(|l| matches!(l.from, Source::Default))
            && let Ok(v) = knob.parse(d)
        {
            typed.insert(k.clone(), v);
        }
    }
    let canonical: BTreeMap<String, String> = typed
        .iter()
        .map(|(k, v)| (k.clone(), v.canonical()))
        .collect();
    let before = diags.len();
    let mut lacking = Vec::new();
    for (k, v) in typed.iter() {
        let Some(knob) = e.engine.knobs.get(k) else {
            continue;
        };
        let rules = &knob.versions;
        let Some(lacks) = rules
            .version_lacks(e.version)
            .or_else(|| rules.value_lacks(e.version, &v.canonical()))
            .or_else(|| rules.when_lacks(&canonical))
        else {
            continue;
        };
        match raw.get(k) {
            Some(
                layer @ Layer {
                    from: Source::Scenario(_) | Source::Flag,
                    ..
                },
            ) => {
                let msg = format!("{} {}", e.label, lacks.describe(k));
                let hint = format!(
                    "leave `{k}` out for {}, or pick a version that has it; {k}: {}",
                    e.label, knob.description
                );
                diags.push(layer.diag_hint(k, s, e.engine, msg, Some(hint)));
            }
            _ => lacking.push(k.clone()),
        }
    }
    for k in lacking {
        typed.remove(&k);
    }
    (diags.len() == before).then_some(())
}

/// The most client threads the scenario opens at once: its load's and
/// its phases' largest count.
pub(super) fn max_threads(s: &Scenario) -> u32 {
    let phases = s.phases.iter().flat_map(|p| p.threads.iter().copied());
    phases
        .chain(s.load.as_ref().map(|l| l.threads))
        .max()
        .unwrap_or(1)
}

/// Raise each `per_thread` knob left at its default to what the largest
/// thread count needs, and refuse one a scenario or `--set` gave below it.
fn grow_per_thread(
    e: &Entry,
    s: &Scenario,
    raw: &BTreeMap<String, Layer>,
    typed: &mut BTreeMap<String, KnobValue>,
    diags: &mut Diagnostics,
) -> Option<Vec<String>> {
    let threads = max_threads(s);
    let mut raised = Vec::new();
    let before = diags.len();
    for (k, knob) in &e.engine.knobs {
        let Some(pt) = knob.per_thread else { continue };
        let need = pt.need(threads);
        let have = match typed.get(k) {
            Some(KnobValue::Int(v)) => u64::try_from(*v).unwrap_or(0),
            _ => 0,
        };
        if have >= need {
            continue;
        }
        match raw.get(k) {
            Some(layer) if !matches!(layer.from, Source::Default) => {
                let msg = format!(
                    "{}: {k}={have} is below the {need} that {threads} client threads need",
                    e.label
                );
                let hint = format!(
                    "{} per thread + {} spare; leave `{k}` out and plan sets it, or give at least {need}",
                    pt.each, pt.spare
                );
                diags.push(layer.diag_hint(k, s, e.engine, msg, Some(hint)));
            }
            _ => {
                let need_i = i64::try_from(need).unwrap_or(i64::MAX);
                typed.insert(k.clone(), KnobValue::Int(need_i));
                raised.push(format!(
                    "{k}={need}: {} per thread x {threads} threads + {} spare",
                    pt.each, pt.spare
                ));
            }
        }
    }
    (diags.len() == before).then_some(raised)
}

/// Every knob's value as written, last source winning.
fn layers(e: &Entry, sets: &Sets, env_cache: Option<Bytes>) -> BTreeMap<String, Layer> {
    let engine = e.engine;
    let mut raw = BTreeMap::new();
    let mut put = |k: &str, value: &str, from: Source| {
        let value = value.to_string();
        raw.insert(k.to_string(), Layer { value, from });
    };
    for (k, knob) in &engine.knobs {
        if let Some(d) = &knob.default {
            put(k, d, Source::Default);
        }
    }
    if let Some(c) = env_cache {
        let from = Source::Environment(e.ep.name.clone());
        put("cache_size", &c.to_string(), from);
    }
    for (k, v) in &sets.scenario().knobs {
        put(k, v, Source::Scenario(format!("knobs.{k}")));
    }
    for (k, v) in &e.er.knobs {
        put(k, v, Source::Scenario(format!("{}.knobs.{k}", e.er.field)));
    }
    for (k, v) in sets
        .knobs
        .iter()
        .filter(|(k, _)| engine.knobs.contains_key(k))
    {
        put(k, v, Source::Flag);
    }
    raw
}

/// Every knob parsed by its type, and no two conflicting ones on.
fn parse(
    e: &Entry,
    s: &Scenario,
    raw: &BTreeMap<String, Layer>,
    diags: &mut Diagnostics,
) -> Option<BTreeMap<String, KnobValue>> {
    let (engine, label) = (e.engine, &e.label);
    let mut typed = BTreeMap::new();
    let before = diags.len();
    for (k, layer) in raw {
        let Some(knob) = engine.knobs.get(k) else {
            diags.push(layer.diag_hint(
                k,
                s,
                engine,
                format!("{label} has no knob `{k}`"),
                Some(unknown_hint(k, &engine.knob_names())),
            ));
            continue;
        };
        match knob.parse(&layer.value) {
            Ok(tv) => {
                typed.insert(k.clone(), tv);
            }
            Err(msg) => diags.push(layer.diag(k, s, engine, msg)),
        }
    }
    for (k, other) in engine.conflicting_knobs(&typed) {
        // Report where a user turned one of them on, not the default.
        let (key, layer) = [&k, &other]
            .into_iter()
            .filter_map(|n| raw.get(n).map(|l| (n, l)))
            .find(|(_, l)| !matches!(l.from, Source::Default))
            .unwrap_or((&k, &raw[&k]));
        let msg = format!("{label}: knobs `{k}` and `{other}` cannot both be true");
        let hint = Some(format!(
            "turn one of them off; {k}: {}",
            engine.knobs[&k].description
        ));
        diags.push(layer.diag_hint(key, s, engine, msg, hint));
    }
    (diags.len() == before).then_some(typed)
}

/// The cache as the engine version takes it: `Some` when it rounds it (a
/// deviation), `None` when it takes it as is; refused when rounding would
/// give more than planned.
fn round_cache(
    e: &Entry,
    s: &Scenario,
    cache: Bytes,
    deviations: &mut Vec<String>,
    diags: &mut Diagnostics,
) -> Option<Option<Bytes>> {
    let label = &e.label;
    let Some(step) = e
        .engine
        .knobs
        .get("cache_size")
        .and_then(|k| k.step.as_ref())
    else {
        return Some(None);
    };
    let Some(got) = step.round(e.version, cache) else {
        return Some(None);
    };
    if got > cache {
        diags.push(e.ep.diag(
            s,
            "cache",
            format!(
                "{label} takes cache_size in whole {}: {cache} would become {got}, more than planned",
                step.size
            ),
            Some(format!(
                "give a cache of at least {}, or a version from {} on",
                step.size,
                step.before.as_deref().unwrap_or("?")
            )),
        ));
        return None;
    }
    deviations.push(format!(
        "{}: {}: cache {cache} becomes {got} ({label} takes cache_size in whole {})",
        e.ep.name, e.cell_label, step.size
    ));
    Some(Some(got))
}

/// The store URL options the set knobs give (`store:` of a knob), checked
/// as the load generator will read them; the error names the knob.
fn store_options_of(
    engine: &Engine,
    typed: &BTreeMap<String, KnobValue>,
) -> Result<Vec<StoreOption>, (String, String)> {
    let mut out = Vec::new();
    for (k, v) in typed {
        let Some(opt) = engine.knobs.get(k).and_then(|kn| kn.store.as_deref()) else {
            continue;
        };
        let value = v.canonical();
        if engine.readiness.probe == crate::model::Probe::Mongodb {
            crate::clients::mongodb::MongoOptions::from_query(&format!("{opt}={value}"))
                .map_err(|e| (k.clone(), format!("knob `{k}`: {e}")))?;
        }
        out.push(StoreOption {
            knob: k.clone(),
            option: opt.to_string(),
            value,
        });
    }
    out.sort_by(|a, b| a.option.cmp(&b.option));
    Ok(out)
}

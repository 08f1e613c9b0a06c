//! The initial database (specification clause 4.3.3.1), cut into jobs
//! that loader tasks take in turn: items, then per warehouse its row and
//! districts, its stock, and per district its customers with their history
//! and its orders with their lines and new orders. Every job's rows come
//! from its own random stream, so a load is the same whatever the number
//! of loaders.

use super::random::{self, TpccRng};
use super::schema::{self, Col, Table};
use super::{CUSTOMERS, DISTRICTS, ITEMS, NEW_ORDERS_FROM, ORDERS};
use crate::clients::Cell;

/// Items or stock rows per job.
const CHUNK: u64 = 10_000;

/// One unit of loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// Items `from..to` (ids from 1).
    Items { from: u64, to: u64 },
    /// A warehouse row and its districts.
    Warehouse { w: u64 },
    /// Stock of items `from..to` in warehouse `w`.
    Stock { w: u64, from: u64, to: u64 },
    /// A district's customers and their history rows.
    Customers { w: u64, d: u64 },
    /// A district's orders, their lines and the new orders.
    Orders { w: u64, d: u64 },
}

/// What the dates of a batch's `Col::Time` columns are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dates {
    Now,
    Null,
}

/// Rows of one table, without their `Col::Time` columns (which the store
/// fills with the current time or `NULL` as `dates` says).
#[derive(Debug, Clone)]
pub struct Rows {
    pub table: &'static Table,
    pub dates: Dates,
    pub rows: Vec<Vec<Cell>>,
}

impl Rows {
    fn new(table: &'static Table, dates: Dates) -> Rows {
        Rows {
            table,
            dates,
            rows: Vec::new(),
        }
    }

    /// The columns each row carries, in order.
    pub fn columns(&self) -> impl Iterator<Item = &'static str> {
        self.table
            .cols
            .iter()
            .filter(|(_, c)| *c != Col::Time)
            .map(|(n, _)| *n)
    }

    /// The `Col::Time` columns.
    pub(crate) fn date_columns(&self) -> impl Iterator<Item = &'static str> {
        self.table
            .cols
            .iter()
            .filter(|(_, c)| *c == Col::Time)
            .map(|(n, _)| *n)
    }
}

/// Every job of a load of `warehouses`, items first.
pub fn jobs(warehouses: u64) -> Vec<Job> {
    let mut out: Vec<Job> = chunks(ITEMS)
        .map(|(from, to)| Job::Items { from, to })
        .collect();
    for w in 1..=warehouses {
        out.push(Job::Warehouse { w });
        out.extend(chunks(ITEMS).map(|(from, to)| Job::Stock { w, from, to }));
        for d in 1..=DISTRICTS {
            out.push(Job::Customers { w, d });
            out.push(Job::Orders { w, d });
        }
    }
    out
}

fn chunks(n: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..n.div_ceil(CHUNK)).map(move |c| (c * CHUNK + 1, ((c + 1) * CHUNK).min(n) + 1))
}

/// Rows a load of `warehouses` inserts, before order lines (whose count
/// is random); for the progress bar.
pub(crate) fn planned_rows(warehouses: u64) -> u64 {
    let per_district = CUSTOMERS * 2 + ORDERS + (ORDERS - NEW_ORDERS_FROM + 1) + ORDERS * 10;
    ITEMS + warehouses * (1 + DISTRICTS + ITEMS + DISTRICTS * per_district)
}

/// The rows of `job`, generated from `seed`.
pub(crate) fn generate(job: Job, seed: u64) -> Vec<Rows> {
    let stream = match job {
        Job::Items { from, .. } => from,
        Job::Warehouse { w } => w << 40,
        Job::Stock { w, from, .. } => (w << 40) | (1 << 39) | from,
        Job::Customers { w, d } => (w << 40) | (2 << 36) | d,
        Job::Orders { w, d } => (w << 40) | (3 << 36) | d,
    };
    let mut r = TpccRng::new(seed, stream);
    match job {
        Job::Items { from, to } => vec![items(&mut r, from, to)],
        Job::Warehouse { w } => warehouse(&mut r, w),
        Job::Stock { w, from, to } => vec![stock(&mut r, w, from, to)],
        Job::Customers { w, d } => customers(&mut r, w, d),
        Job::Orders { w, d } => orders(&mut r, w, d),
    }
}

fn int(v: u64) -> Cell {
    Cell::Int(v as i64)
}

fn items(r: &mut TpccRng, from: u64, to: u64) -> Rows {
    let mut out = Rows::new(&schema::ITEM, Dates::Now);
    for i in from..to {
        out.rows.push(vec![
            int(i),
            int(r.uniform(1, 10_000)),
            Cell::Text(r.astring(14, 24)),
            Cell::Float(r.money(100, 10_000)),
            Cell::Text(r.data_original()),
        ]);
    }
    out
}

/// Name, two streets, city, state and zip.
fn address(r: &mut TpccRng, name: (u64, u64)) -> [Cell; 6] {
    [
        Cell::Text(r.astring(name.0, name.1)),
        Cell::Text(r.astring(10, 20)),
        Cell::Text(r.astring(10, 20)),
        Cell::Text(r.astring(10, 20)),
        Cell::Text(r.state()),
        Cell::Text(r.zip()),
    ]
}

fn warehouse(r: &mut TpccRng, w: u64) -> Vec<Rows> {
    let mut wh = Rows::new(&schema::WAREHOUSE, Dates::Now);
    let mut row = vec![int(w)];
    row.extend(address(r, (6, 10)));
    row.extend([Cell::Float(r.tax()), Cell::Float(300_000.0)]);
    wh.rows.push(row);
    let mut ds = Rows::new(&schema::DISTRICT, Dates::Now);
    for d in 1..=DISTRICTS {
        let mut row = vec![int(d), int(w)];
        row.extend(address(r, (6, 10)));
        row.extend([Cell::Float(r.tax()), Cell::Float(30_000.0), int(ORDERS + 1)]);
        ds.rows.push(row);
    }
    vec![wh, ds]
}

fn stock(r: &mut TpccRng, w: u64, from: u64, to: u64) -> Rows {
    let mut out = Rows::new(&schema::STOCK, Dates::Now);
    for i in from..to {
        let mut row = Vec::with_capacity(17);
        row.extend([int(i), int(w), int(r.uniform(10, 100))]);
        row.extend((0..DISTRICTS).map(|_| Cell::Text(r.astring(24, 24))));
        row.extend([int(0), int(0), int(0), Cell::Text(r.data_original())]);
        out.rows.push(row);
    }
    out
}

fn customers(r: &mut TpccRng, w: u64, d: u64) -> Vec<Rows> {
    let mut cs = Rows::new(&schema::CUSTOMER, Dates::Now);
    let mut hs = Rows::new(&schema::HISTORY, Dates::Now);
    for c in 1..=CUSTOMERS {
        let last = if c <= 1000 {
            c - 1
        } else {
            r.last_name_number(&random::LOAD, 1000)
        };
        let mut row = vec![
            int(c),
            int(d),
            int(w),
            Cell::Text(r.astring(8, 16)),
            Cell::Text("OE".into()),
            Cell::Text(random::last_name(last)),
        ];
        let [_, s1, s2, city, state, zip] = address(r, (0, 0));
        row.extend([s1, s2, city, state, zip]);
        row.extend([
            Cell::Text(r.nstring(16, 16)),
            Cell::Text(if r.uniform(1, 10) == 1 { "BC" } else { "GC" }.into()),
            Cell::Float(50_000.0),
            Cell::Float(r.uniform(0, 5000) as f64 / 10_000.0),
            Cell::Float(-10.0),
            Cell::Float(10.0),
            int(1),
            int(0),
            Cell::Text(r.astring(300, 500)),
        ]);
        cs.rows.push(row);
        hs.rows.push(vec![
            int(c),
            int(d),
            int(w),
            int(d),
            int(w),
            Cell::Float(10.0),
            Cell::Text(r.astring(12, 24)),
        ]);
    }
    vec![cs, hs]
}

fn orders(r: &mut TpccRng, w: u64, d: u64) -> Vec<Rows> {
    // Each customer places one order: a random permutation of the ids.
    let mut cust: Vec<u64> = (1..=CUSTOMERS).collect();
    for i in (1..cust.len()).rev() {
        let j = r.uniform(0, i as u64) as usize;
        cust.swap(i, j);
    }
    let mut delivered = Rows::new(&schema::ORDERS, Dates::Now);
    let mut open = Rows::new(&schema::ORDERS, Dates::Now);
    let mut lines_done = Rows::new(&schema::ORDER_LINE, Dates::Now);
    let mut lines_open = Rows::new(&schema::ORDER_LINE, Dates::Null);
    let mut new_orders = Rows::new(&schema::NEW_ORDER, Dates::Now);
    for o in 1..=ORDERS {
        let ol_cnt = r.uniform(5, 15);
        let done = o < NEW_ORDERS_FROM;
        let carrier = if done {
            int(r.uniform(1, 10))
        } else {
            Cell::Null
        };
        let row = vec![
            int(o),
            int(d),
            int(w),
            int(cust[o as usize - 1]),
            carrier,
            int(ol_cnt),
            int(1),
        ];
        if done {
            delivered.rows.push(row);
        } else {
            open.rows.push(row);
            new_orders.rows.push(vec![int(o), int(d), int(w)]);
        }
        for n in 1..=ol_cnt {
            let amount = if done { 0.0 } else { r.money(1, 999_999) };
            let line = vec![
                int(o),
                int(d),
                int(w),
                int(n),
                int(r.uniform(1, ITEMS)),
                int(w),
                int(5),
                Cell::Float(amount),
                Cell::Text(r.astring(24, 24)),
            ];
            if done {
                lines_done.rows.push(line);
            } else {
                lines_open.rows.push(line);
            }
        }
    }
    vec![delivered, open, new_orders, lines_done, lines_open]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(rows: &[Rows], table: &str) -> usize {
        rows.iter()
            .filter(|r| r.table.name == table)
            .map(|r| r.rows.len())
            .sum()
    }

    #[test]
    fn jobs_cover_the_specified_cardinalities() {
        let mut all = Vec::new();
        for j in jobs(1) {
            all.extend(generate(j, 1));
        }
        assert_eq!(count(&all, "item"), 100_000);
        assert_eq!(count(&all, "warehouse"), 1);
        assert_eq!(count(&all, "district"), 10);
        assert_eq!(count(&all, "stock"), 100_000);
        assert_eq!(count(&all, "customer"), 30_000);
        assert_eq!(count(&all, "history"), 30_000);
        assert_eq!(count(&all, "orders"), 30_000);
        assert_eq!(count(&all, "new_order"), 9_000);
        let lines = count(&all, "order_line");
        assert!((285_000..315_000).contains(&lines), "{lines}");
        for r in &all {
            let n = r.columns().count();
            assert!(r.rows.iter().all(|row| row.len() == n), "{}", r.table.name);
        }
    }

    #[test]
    fn the_first_thousand_customers_have_every_last_name_once() {
        let rows = generate(Job::Customers { w: 1, d: 1 }, 1);
        let names: std::collections::BTreeSet<&str> =
            rows[0].rows[..1000].iter().map(|r| r[5].text()).collect();
        assert_eq!(names.len(), 1000);
        assert_eq!(rows[0].rows[0][5].text(), "BARBARBAR");
    }

    #[test]
    fn a_job_is_the_same_whoever_loads_it() {
        let j = Job::Orders { w: 2, d: 3 };
        assert_eq!(generate(j, 7)[0].rows, generate(j, 7)[0].rows);
    }
}

//! TPC-C consistency conditions 1 to 4 (specification clause 3.3.2),
//! checked per warehouse and district after a run:
//! 1. `W_YTD = sum(D_YTD)` of its districts;
//! 2. `D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)`;
//! 3. `max(NO_O_ID) - min(NO_O_ID) + 1` = the district's new orders;
//! 4. `sum(O_OL_CNT)` = the district's order lines.

use super::sql::SqlConn;
use crate::clients::Cell;
use crate::workload::stores::StoreError;
use std::collections::BTreeMap;

/// Violations listed in full; more are counted.
const SHOWN: usize = 5;

/// What the database holds, per warehouse and per district, for the four
/// conditions. Missing districts read as 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub w_ytd: BTreeMap<u64, f64>,
    /// Per warehouse, the sum of its districts' `D_YTD`.
    pub d_ytd_sum: BTreeMap<u64, f64>,
    /// Per (warehouse, district).
    pub next_o_id: BTreeMap<(u64, u64), i64>,
    pub max_o_id: BTreeMap<(u64, u64), i64>,
    /// max, min and count of `NO_O_ID`.
    pub new_orders: BTreeMap<(u64, u64), (i64, i64, i64)>,
    pub ol_cnt_sum: BTreeMap<(u64, u64), i64>,
    pub order_lines: BTreeMap<(u64, u64), i64>,
}

/// Amounts equal to the cent.
fn same_amount(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.005
}

impl Facts {
    /// Each failed condition, in words: at most [`SHOWN`] of them, then
    /// how many more.
    pub fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (w, ytd) in &self.w_ytd {
            let sum = self.d_ytd_sum.get(w).copied().unwrap_or(0.0);
            if !same_amount(*ytd, sum) {
                out.push(format!(
                    "condition 1: warehouse {w} has W_YTD {ytd:.2} but its districts' D_YTD sum to {sum:.2}"
                ));
            }
        }
        for (&(w, d), &next) in &self.next_o_id {
            let max_o = self.max_o_id.get(&(w, d)).copied().unwrap_or(0);
            let no = self.new_orders.get(&(w, d)).copied();
            if next - 1 != max_o || no.is_some_and(|(max_no, _, _)| max_no != max_o) {
                out.push(format!(
                    "condition 2: district {w}/{d} has D_NEXT_O_ID - 1 = {}, max(O_ID) = {max_o}, max(NO_O_ID) = {}",
                    next - 1,
                    no.map_or("none".into(), |n| n.0.to_string())
                ));
            }
            if let Some((max, min, count)) = no
                && max - min + 1 != count
            {
                out.push(format!(
                    "condition 3: district {w}/{d} has new orders {min}..{max} ({} ids) but {count} rows",
                    max - min + 1
                ));
            }
            let ol_cnt = self.ol_cnt_sum.get(&(w, d)).copied().unwrap_or(0);
            let lines = self.order_lines.get(&(w, d)).copied().unwrap_or(0);
            if ol_cnt != lines {
                out.push(format!(
                    "condition 4: district {w}/{d} has sum(O_OL_CNT) {ol_cnt} but {lines} order lines"
                ));
            }
        }
        if out.len() > SHOWN {
            let more = out.len() - SHOWN;
            out.truncate(SHOWN);
            out.push(format!("and {more} more"));
        }
        out
    }
}

fn key1(r: &[Cell]) -> u64 {
    r[0].int().unwrap_or(0) as u64
}

fn key2(r: &[Cell]) -> (u64, u64) {
    (
        r[0].int().unwrap_or(0) as u64,
        r[1].int().unwrap_or(0) as u64,
    )
}

/// The facts of a SQL database, read with grouped queries.
pub(crate) async fn sql_facts<C: SqlConn>(c: &mut C) -> Result<Facts, StoreError> {
    let mut f = Facts::default();
    let int = |x: &Cell| x.int().unwrap_or(0);
    for r in c.select("SELECT w_id, w_ytd FROM warehouse").await? {
        f.w_ytd.insert(key1(&r), r[1].float().unwrap_or(0.0));
    }
    for r in c
        .select("SELECT d_w_id, SUM(d_ytd) FROM district GROUP BY d_w_id")
        .await?
    {
        f.d_ytd_sum.insert(key1(&r), r[1].float().unwrap_or(0.0));
    }
    for r in c
        .select("SELECT d_w_id, d_id, d_next_o_id FROM district")
        .await?
    {
        f.next_o_id.insert(key2(&r), int(&r[2]));
    }
    for r in c
        .select(
            "SELECT o_w_id, o_d_id, MAX(o_id), SUM(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id",
        )
        .await?
    {
        f.max_o_id.insert(key2(&r), int(&r[2]));
        f.ol_cnt_sum.insert(key2(&r), int(&r[3]));
    }
    for r in c
        .select(
            "SELECT no_w_id, no_d_id, MAX(no_o_id), MIN(no_o_id), COUNT(*) FROM new_order \
             GROUP BY no_w_id, no_d_id",
        )
        .await?
    {
        f.new_orders
            .insert(key2(&r), (int(&r[2]), int(&r[3]), int(&r[4])));
    }
    for r in c
        .select("SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line GROUP BY ol_w_id, ol_d_id")
        .await?
    {
        f.order_lines.insert(key2(&r), int(&r[2]));
    }
    Ok(f)
}

/// The violated conditions of a SQL database.
pub async fn sql<C: SqlConn>(c: &mut C) -> Result<Vec<String>, StoreError> {
    Ok(sql_facts(c).await?.violations())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consistent() -> Facts {
        let mut f = Facts::default();
        f.w_ytd.insert(1, 300_000.0);
        f.d_ytd_sum.insert(1, 300_000.001);
        f.next_o_id.insert((1, 1), 3001);
        f.max_o_id.insert((1, 1), 3000);
        f.new_orders.insert((1, 1), (3000, 2101, 900));
        f.ol_cnt_sum.insert((1, 1), 30_123);
        f.order_lines.insert((1, 1), 30_123);
        f
    }

    #[test]
    fn a_consistent_database_has_no_violations() {
        assert_eq!(consistent().violations(), Vec::<String>::new());
    }

    #[test]
    fn each_condition_names_what_broke_it() {
        let mut f = consistent();
        f.d_ytd_sum.insert(1, 299_000.0);
        f.next_o_id.insert((1, 1), 3002);
        f.new_orders.insert((1, 1), (3000, 2101, 899));
        f.order_lines.insert((1, 1), 30_122);
        let v = f.violations();
        assert_eq!(v.len(), 4, "{v:?}");
        for (i, c) in ["condition 1", "condition 2", "condition 3", "condition 4"]
            .iter()
            .enumerate()
        {
            assert!(v[i].starts_with(c), "{v:?}");
        }
        assert!(v[1].contains("D_NEXT_O_ID - 1 = 3001"), "{}", v[1]);
    }
}

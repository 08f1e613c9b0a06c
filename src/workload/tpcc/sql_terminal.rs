//! One TPC-C terminal on PostgreSQL or MySQL/MariaDB: the five
//! transactions as prepared statements, sent in as few round trips as
//! their data dependencies allow. Statements that need no answer from the
//! ones before them go out together in one [`Step`] pipeline (PostgreSQL
//! runs them in one round trip; MySQL answers each in turn); a NEW ORDER's
//! items, stock rows and order lines are one statement each, for all its
//! lines. Rows a transaction changes are locked (`FOR UPDATE`) before
//! they are read for the change, in one order (district, then stock by
//! supply warehouse and item), so concurrent terminals rarely deadlock; a
//! deadlock the server breaks is run again by the terminal.

use super::DISTRICTS;
use super::schema::Dialect;
use super::sql::{AnySql, SqlConn};
use super::txn::{
    CustomerBy, Delivery, Line, NewOrder, NewOrderEnd, OrderStatus, Payment, StockLevel, TpccConn,
};
use crate::clients::{Cell, Outcome, Param, Step};
use crate::workload::stores::StoreError;
use std::collections::BTreeMap;

fn int(v: u64) -> Param<'static> {
    Param::Int(v as i64)
}

/// The statements of the five transactions.
struct Statements {
    no_w: usize,
    no_d: usize,
    no_d_up: usize,
    no_c: usize,
    no_o: usize,
    no_no: usize,
    p_w_up: usize,
    p_w: usize,
    p_d_up: usize,
    p_d: usize,
    c_by_name: usize,
    p_c: usize,
    p_c_data: usize,
    p_c_up: usize,
    p_c_up_bc: usize,
    p_h: usize,
    /// PostgreSQL: a whole PAYMENT in one statement, by customer id and by
    /// last name.
    p_one: Option<(usize, usize)>,
    os_c: usize,
    os_o: usize,
    os_ol: usize,
    dl_no: usize,
    dl_no_del: usize,
    dl_o: usize,
    dl_o_up: usize,
    dl_ol_up: usize,
    dl_ol_sum: usize,
    dl_c_up: usize,
    /// PostgreSQL: one district's whole delivery in one statement.
    dl_district: Option<usize>,
    sl_d: usize,
    sl_count: usize,
}

/// One terminal's connection with the statements prepared.
pub struct SqlTerminal {
    conn: AnySql,
    dialect: Dialect,
    st: Statements,
    /// The statements over several rows, per kind and row count.
    multi: BTreeMap<(Multi, usize), usize>,
}

impl SqlTerminal {
    pub(super) async fn prepare(
        mut conn: AnySql,
        dialect: Dialect,
    ) -> Result<SqlTerminal, StoreError> {
        if let AnySql::My(c) = &mut conn {
            c.autocommit_off().await?;
        }
        let mut p = async |sql: &str| conn.prepare(&dialect.marks(sql)).await;
        let c_where = "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?";
        let st = Statements {
            no_w: p("SELECT w_tax FROM warehouse WHERE w_id = ?").await?,
            no_d: p("SELECT d_tax, d_next_o_id FROM district \
                     WHERE d_w_id = ? AND d_id = ? FOR UPDATE")
            .await?,
            no_d_up: p("UPDATE district SET d_next_o_id = d_next_o_id + 1 \
                        WHERE d_w_id = ? AND d_id = ?")
            .await?,
            no_c: p(&format!(
                "SELECT c_discount, c_last, c_credit FROM customer {c_where}"
            ))
            .await?,
            no_o: p(
                "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, \
                     o_carrier_id, o_ol_cnt, o_all_local) \
                     VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP, NULL, ?, ?)",
            )
            .await?,
            no_no: p("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)").await?,
            p_w_up: p("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?").await?,
            p_w: p(
                "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip \
                    FROM warehouse WHERE w_id = ?",
            )
            .await?,
            p_d_up: p("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?")
                .await?,
            p_d: p(
                "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip \
                    FROM district WHERE d_w_id = ? AND d_id = ?",
            )
            .await?,
            c_by_name: p("SELECT c_id FROM customer \
                          WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first")
            .await?,
            p_c: p(&format!(
                "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, \
                 c_state, c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance \
                 FROM customer {c_where} FOR UPDATE"
            ))
            .await?,
            p_c_data: p(&format!("SELECT c_data FROM customer {c_where}")).await?,
            p_c_up: p(&format!(
                "UPDATE customer SET c_balance = c_balance - ?, \
                 c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1 \
                 {c_where}"
            ))
            .await?,
            p_c_up_bc: p(&format!(
                "UPDATE customer SET c_balance = c_balance - ?, \
                 c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1, \
                 c_data = ? {c_where}"
            ))
            .await?,
            p_h: p(
                "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, \
                    h_date, h_amount, h_data) VALUES (?, ?, ?, ?, ?, CURRENT_TIMESTAMP, ?, ?)",
            )
            .await?,
            os_c: p(&format!(
                "SELECT c_first, c_middle, c_last, c_balance FROM customer {c_where}"
            ))
            .await?,
            os_o: p(
                "SELECT o_id, o_carrier_id, o_entry_d, o_ol_cnt FROM orders \
                     WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1",
            )
            .await?,
            os_ol: p(
                "SELECT ol_supply_w_id, ol_i_id, ol_quantity, ol_amount, ol_delivery_d \
                      FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
            )
            .await?,
            dl_no: p(
                "SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? \
                      ORDER BY no_o_id LIMIT 1 FOR UPDATE",
            )
            .await?,
            dl_no_del: p("DELETE FROM new_order \
                          WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?")
            .await?,
            dl_o: p("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?")
                .await?,
            dl_o_up: p("UPDATE orders SET o_carrier_id = ? \
                        WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?")
            .await?,
            dl_ol_up: p("UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP \
                         WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?")
            .await?,
            dl_ol_sum: p("SELECT SUM(ol_amount) FROM order_line \
                          WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?")
            .await?,
            dl_c_up: p(&format!(
                "UPDATE customer SET c_balance = c_balance + ?, \
                 c_delivery_cnt = c_delivery_cnt + 1 {c_where}"
            ))
            .await?,
            p_one: match dialect {
                Dialect::Postgres => {
                    // The middle one (n/2 rounded up) by first name, in
                    // one pass over the name's customers.
                    let by_name = format!(
                        "(SELECT c_id FROM (SELECT c_id, \
                         row_number() OVER (ORDER BY c_first) AS n, count(*) OVER () AS of \
                         FROM customer WHERE {NAMED}) named WHERE n = (of + 1) / 2)"
                    );
                    let id = p(&PAYMENT.replace("{C}", "$5::int")).await?;
                    Some((id, p(&PAYMENT.replace("{C}", &by_name)).await?))
                }
                Dialect::Mysql => None,
            },
            dl_district: match dialect {
                Dialect::Postgres => Some(p(DELIVER_DISTRICT).await?),
                Dialect::Mysql => None,
            },
            sl_d: p("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?").await?,
            sl_count: p("SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock \
                         WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? \
                         AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?")
            .await?,
        };
        Ok(SqlTerminal {
            conn,
            dialect,
            st,
            multi: BTreeMap::new(),
        })
    }
}

/// A PAYMENT on PostgreSQL (`$1` warehouse, `$2` district, `$3` and `$4`
/// the customer's warehouse and district, `$5` the customer (`{C}`: its id
/// or the middle one of a last name), `$6` the amount), as data-modifying
/// CTEs: the customer paid (a bad-credit one's data prefixed with the
/// payment), then the warehouse and the district, and the history row;
/// nothing changes when the customer is not there (no row comes back).
/// Parameters are cast where they are first used, so that each has one
/// type however often it appears.
const PAYMENT: &str = "WITH c AS (UPDATE customer SET c_balance = c_balance - $6::numeric, \
    c_ytd_payment = c_ytd_payment + $6::numeric, c_payment_cnt = c_payment_cnt + 1, \
    c_data = CASE WHEN c_credit = 'BC' THEN left(c_id || ' ' || $4::int || ' ' || $3::int \
      || ' ' || $2::int || ' ' || $1::int || ' ' || to_char($6::numeric, 'FM9999999990.00') \
      || ' | ' || c_data, 500) ELSE c_data END \
    WHERE c_w_id = $3::int AND c_d_id = $4::int AND c_id = {C} \
    RETURNING c_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, \
      c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance), \
  w AS (UPDATE warehouse SET w_ytd = w_ytd + $6::numeric \
    WHERE w_id = $1::int AND EXISTS (SELECT 1 FROM c) \
    RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip), \
  d AS (UPDATE district SET d_ytd = d_ytd + $6::numeric \
    WHERE d_w_id = $1::int AND d_id = $2::int AND EXISTS (SELECT 1 FROM c) \
    RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip), \
  h AS (INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
    SELECT c.c_id, $4::int, $3::int, $2::int, $1::int, CURRENT_TIMESTAMP, $6::numeric, \
      w.w_name || '    ' || d.d_name FROM c, w, d) \
  SELECT c.*, w.*, d.* FROM c, w, d";

/// The customers of a last name in `$3`/`$4` (`$5`).
const NAMED: &str = "c_w_id = $3::int AND c_d_id = $4::int AND c_last = $5::text";

/// One district's delivery on PostgreSQL (`$1` warehouse, `$2` district,
/// `$3` carrier), as data-modifying CTEs: its oldest new order deleted,
/// the order given the carrier, its lines delivered, their sum added to
/// the customer's balance. A new order another DELIVERY holds is skipped
/// for the next one (`SKIP LOCKED`), as the MySQL terminal takes the next
/// one when the oldest was taken under it. Each row is found by its key
/// and a scalar subquery, never by a join with a CTE, whose rows the
/// planner cannot count: a prepared statement's generic plan would scan.
const DELIVER_DISTRICT: &str = "WITH no AS (\
    DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = (\
      SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 \
      ORDER BY no_o_id LIMIT 1 FOR UPDATE SKIP LOCKED) \
    RETURNING no_o_id), \
  o AS (UPDATE orders SET o_carrier_id = $3 \
    WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = (SELECT no_o_id FROM no) RETURNING o_c_id), \
  ol AS (UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP \
    WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = (SELECT no_o_id FROM no) \
    RETURNING ol_amount) \
  UPDATE customer SET c_balance = c_balance + (SELECT COALESCE(SUM(ol_amount), 0) FROM ol), \
    c_delivery_cnt = c_delivery_cnt + 1 \
  WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = (SELECT o_c_id FROM o)";

/// Statements over several rows, prepared per row count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Multi {
    /// An order's items: `SELECT ... FROM item WHERE i_id IN (...)`.
    Items,
    /// An order's stock rows, locked in key order, with the district's
    /// `s_dist_NN` (the first parameter).
    Stock,
    /// Their new quantities and counters, one row each.
    StockUp,
    /// `INSERT INTO order_line`, one row per line.
    Lines,
}

impl Multi {
    /// The statement for `n` rows, with `?` placeholders.
    fn sql(self, dialect: Dialect, n: usize) -> String {
        let list = |one: &str, sep: &str| vec![one; n].join(sep);
        match self {
            Multi::Items => format!(
                "SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({})",
                list("?", ", ")
            ),
            Multi::Stock => {
                let dist: String = (1..=DISTRICTS)
                    .map(|d| format!(" WHEN {d} THEN s_dist_{d:02}"))
                    .collect();
                // PostgreSQL would take an untyped CASE operand for text.
                let district = match dialect {
                    Dialect::Postgres => "?::int",
                    Dialect::Mysql => "?",
                };
                format!(
                    "SELECT s_w_id, s_i_id, s_quantity, s_data, CASE {district}{dist} END FROM stock \
                     WHERE {} ORDER BY s_w_id, s_i_id FOR UPDATE",
                    list("(s_w_id = ? AND s_i_id = ?)", " OR ")
                )
            }
            Multi::StockUp => {
                let set = "s_quantity = v.q, s_ytd = s_ytd + v.y, \
                           s_order_cnt = s_order_cnt + v.c, s_remote_cnt = s_remote_cnt + v.r";
                let on = "s_w_id = v.w AND s_i_id = v.i";
                match dialect {
                    Dialect::Postgres => format!(
                        "UPDATE stock SET {set} FROM (VALUES {}) AS v (w, i, q, y, c, r) WHERE {on}",
                        list("(?::int, ?::int, ?::int, ?::int, ?::int, ?::int)", ", ")
                    ),
                    Dialect::Mysql => format!(
                        "UPDATE stock JOIN (SELECT ? AS w, ? AS i, ? AS q, ? AS y, ? AS c, ? AS r{}) \
                         AS v ON {on} SET {set}",
                        " UNION ALL SELECT ?, ?, ?, ?, ?, ?".repeat(n.saturating_sub(1))
                    ),
                }
            }
            Multi::Lines => format!(
                "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, \
                 ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES {}",
                list("(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)", ", ")
            ),
        }
    }
}

/// One stock row an order changes: the lines it supplies (adjacent, as
/// lines are sorted by supply warehouse and item) and what they take.
#[derive(Debug, Clone, Copy, PartialEq)]
struct StockChange {
    w: u64,
    i: u64,
    /// Its lines: `lines[first..first + count]`.
    first: usize,
    count: usize,
}

/// The distinct stock rows of `lines`, in their order.
fn stock_changes(lines: &[Line]) -> Vec<StockChange> {
    let mut out: Vec<StockChange> = Vec::with_capacity(lines.len());
    for (k, l) in lines.iter().enumerate() {
        match out.last_mut() {
            Some(c) if c.w == l.supply_w_id && c.i == l.i_id => c.count += 1,
            _ => out.push(StockChange {
                w: l.supply_w_id,
                i: l.i_id,
                first: k,
                count: 1,
            }),
        }
    }
    out
}

/// The quantity left after one line takes `ordered` of `q` (restocked by
/// 91 when fewer than 10 would remain, clause 2.4.2.2).
fn quantity_left(q: u64, ordered: u64) -> u64 {
    if q >= ordered + 10 {
        q - ordered
    } else {
        q + 91 - ordered
    }
}

/// The rows of step `i`'s outcome (taken out of `out`).
fn rows_at(out: &mut [Outcome], i: usize) -> Vec<Vec<Cell>> {
    out.get_mut(i)
        .map(|o| std::mem::replace(o, Outcome::Done).into_rows())
        .unwrap_or_default()
}

/// The first row of `rows`, or `NotFound(what)`.
fn first(mut rows: Vec<Vec<Cell>>, what: impl FnOnce() -> String) -> Result<Vec<Cell>, StoreError> {
    if rows.is_empty() {
        return Err(StoreError::NotFound(what()));
    }
    Ok(rows.swap_remove(0))
}

/// The middle customer (n/2 rounded up) of those with one last name,
/// sorted by first name: rows of `c_by_name`.
fn middle(rows: &[Vec<Cell>], w: u64, d: u64, name: &str) -> Result<u64, StoreError> {
    if rows.is_empty() {
        return Err(StoreError::NotFound(format!(
            "customer {w}/{d} named {name}"
        )));
    }
    let mid = rows.len().div_ceil(2) - 1;
    Ok(rows[mid][0].int().unwrap_or(0) as u64)
}

/// The ends of the pipelines the transactions send.
const COMMIT: Step<'static> = Step::Text("COMMIT");

impl SqlTerminal {
    /// Ends a transaction whose body did not commit it: `ROLLBACK` (a
    /// failed or rolled-back transaction).
    async fn finish<T>(&mut self, r: Result<(T, bool), StoreError>) -> Result<T, StoreError> {
        match r {
            Ok((v, true)) => Ok(v),
            Ok((v, false)) => {
                self.conn.text("ROLLBACK").await?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.text("ROLLBACK").await;
                Err(e)
            }
        }
    }

    /// The statement of kind `m` over `n` rows, prepared on first use.
    async fn multi(&mut self, m: Multi, n: usize) -> Result<usize, StoreError> {
        if let Some(s) = self.multi.get(&(m, n)) {
            return Ok(*s);
        }
        let s = self
            .conn
            .prepare(&self.dialect.marks(&m.sql(self.dialect, n)))
            .await?;
        self.multi.insert((m, n), s);
        Ok(s)
    }
}

impl SqlTerminal {
    /// Two round trips: the reads and locks (items, warehouse, district
    /// and its next order id, customer, stock rows), then the writes and
    /// `COMMIT`.
    async fn new_order_body(&mut self, t: &NewOrder) -> Result<(NewOrderEnd, bool), StoreError> {
        let n = t.lines.len();
        let changes = stock_changes(&t.lines);
        let items_st = self.multi(Multi::Items, n).await?;
        let stock_st = self.multi(Multi::Stock, changes.len()).await?;
        let up_st = self.multi(Multi::StockUp, changes.len()).await?;
        let lines_st = self.multi(Multi::Lines, n).await?;
        let (w, d, c) = (t.w_id, t.d_id, t.c_id);
        let ids: Vec<Param> = t.lines.iter().map(|l| int(l.i_id)).collect();
        let mut keys = Vec::with_capacity(1 + 2 * changes.len());
        keys.push(int(d));
        keys.extend(changes.iter().flat_map(|s| [int(s.w), int(s.i)]));
        let (wp, dp, cp) = ([int(w)], [int(w), int(d)], [int(w), int(d), int(c)]);
        let mut out = self
            .conn
            .pipeline(&[
                Step::Begin,
                Step::Rows(items_st, &ids),
                Step::Rows(self.st.no_w, &wp),
                Step::Rows(self.st.no_d, &dp),
                Step::Exec(self.st.no_d_up, &dp),
                Step::Rows(self.st.no_c, &cp),
                Step::Rows(stock_st, &keys),
            ])
            .await?;
        let items = rows_at(&mut out, 1);
        let mut prices = Vec::with_capacity(n);
        for l in &t.lines {
            match items.iter().find(|r| r[0].int() == Some(l.i_id as i64)) {
                Some(r) => prices.push(r[1].float().unwrap_or(0.0)),
                None => return Ok((NewOrderEnd::RolledBack, false)),
            }
        }
        let wh = first(rows_at(&mut out, 2), || format!("warehouse {w}"))?;
        let dist = first(rows_at(&mut out, 3), || format!("district {w}/{d}"))?;
        let cust = first(rows_at(&mut out, 5), || format!("customer {w}/{d}/{c}"))?;
        let stock = rows_at(&mut out, 6);
        let o_id = dist[1].int().unwrap_or(0) as u64;
        let mut updates = Vec::with_capacity(6 * changes.len());
        let mut lines = Vec::with_capacity(9 * n);
        let mut total = 0.0;
        for (k, s) in changes.iter().enumerate() {
            let row = stock
                .get(k)
                .filter(|r| r[0].int() == Some(s.w as i64) && r[1].int() == Some(s.i as i64))
                .ok_or_else(|| StoreError::NotFound(format!("stock {}/{}", s.w, s.i)))?;
            let mut q = row[2].int().unwrap_or(0) as u64;
            let mut ordered = 0;
            for (j, l) in t.lines.iter().enumerate().skip(s.first).take(s.count) {
                q = quantity_left(q, l.quantity);
                ordered += l.quantity;
                let amount = l.quantity as f64 * prices[j];
                total += amount;
                lines.extend([
                    int(o_id),
                    int(d),
                    int(w),
                    int(j as u64 + 1),
                    int(l.i_id),
                    int(l.supply_w_id),
                    int(l.quantity),
                    Param::Float((amount * 100.0).round() / 100.0),
                    Param::Text(row[4].text()),
                ]);
            }
            let remote = if s.w != w { s.count as u64 } else { 0 };
            updates.extend([int(s.w), int(s.i), int(q), int(ordered)]);
            updates.extend([int(s.count as u64), int(remote)]);
        }
        let order = [
            int(o_id),
            int(d),
            int(w),
            int(c),
            int(n as u64),
            int(t.all_local as u64),
        ];
        self.conn
            .pipeline(&[
                Step::Exec(self.st.no_o, &order),
                Step::Exec(self.st.no_no, &order[..3]),
                Step::Exec(up_st, &updates),
                Step::Exec(lines_st, &lines),
                COMMIT,
            ])
            .await?;
        // The order's total (clause 2.4.2.2), as the terminal would show it.
        let rates = wh[0].float().unwrap_or(0.0) + dist[0].float().unwrap_or(0.0);
        let _shown = total * (1.0 - cust[0].float().unwrap_or(0.0)) * (1.0 + rates);
        Ok((NewOrderEnd::Committed, true))
    }
}

impl SqlTerminal {
    /// Two round trips (one more to find a customer by name, one more
    /// for a bad-credit customer's data): warehouse, district and
    /// customer, then the customer's update, history and `COMMIT`; on
    /// PostgreSQL one statement, in one round trip.
    async fn payment_body(&mut self, t: &Payment) -> Result<((), bool), StoreError> {
        if let Some(st) = self.st.p_one {
            return self.payment_in_one_statement(st, t).await;
        }
        let (w, d, a) = (t.w_id, t.d_id, t.amount);
        let (cw, cd) = (t.c_w_id, t.c_d_id);
        let (wp, dp) = ([int(w)], [int(w), int(d)]);
        let (w_up, d_up) = ([Param::Float(a), int(w)], [Param::Float(a), int(w), int(d)]);
        let (by_id, name) = match &t.customer {
            CustomerBy::Id(c) => (Some(*c), ""),
            CustomerBy::Last(name) => (None, name.as_str()),
        };
        let id_key = [int(cw), int(cd), int(by_id.unwrap_or(0))];
        let name_key = [int(cw), int(cd), Param::Text(name)];
        let find = match by_id {
            Some(_) => Step::Rows(self.st.p_c, &id_key),
            None => Step::Rows(self.st.c_by_name, &name_key),
        };
        let mut out = self
            .conn
            .pipeline(&[
                Step::Begin,
                Step::Exec(self.st.p_w_up, &w_up),
                Step::Rows(self.st.p_w, &wp),
                Step::Exec(self.st.p_d_up, &d_up),
                Step::Rows(self.st.p_d, &dp),
                find,
            ])
            .await?;
        let wh = first(rows_at(&mut out, 2), || format!("warehouse {w}"))?;
        let dist = first(rows_at(&mut out, 4), || format!("district {w}/{d}"))?;
        let found = rows_at(&mut out, 5);
        let (c, cust) = match by_id {
            Some(c) => (c, found),
            None => {
                let c = middle(&found, cw, cd, name)?;
                let key = [int(cw), int(cd), int(c)];
                (c, self.conn.rows(self.st.p_c, &key).await?)
            }
        };
        let cust = first(cust, || format!("customer {cw}/{cd}/{c}"))?;
        let key = [int(cw), int(cd), int(c)];
        let data = if cust[9].text() == "BC" {
            let old = self.conn.rows(self.st.p_c_data, &key).await?;
            let old = first(old, || format!("customer {cw}/{cd}/{c}"))?;
            let mut data = format!("{c} {cd} {cw} {d} {w} {a:.2} | {}", old[0].text());
            data.truncate(500);
            Some(data)
        } else {
            None
        };
        let up_bc = data.as_deref().map(|data| {
            let paid = [Param::Float(a), Param::Float(a), Param::Text(data)];
            [paid[0], paid[1], paid[2], key[0], key[1], key[2]]
        });
        let up = [Param::Float(a), Param::Float(a), key[0], key[1], key[2]];
        let update = match &up_bc {
            Some(p) => Step::Exec(self.st.p_c_up_bc, p),
            None => Step::Exec(self.st.p_c_up, &up),
        };
        let h_data = format!("{}    {}", wh[0].text(), dist[0].text());
        let history = [
            int(c),
            int(cd),
            int(cw),
            int(d),
            int(w),
            Param::Float(a),
            Param::Text(&h_data),
        ];
        self.conn
            .pipeline(&[update, Step::Exec(self.st.p_h, &history), COMMIT])
            .await?;
        Ok(((), true))
    }

    /// PostgreSQL: one round trip, `BEGIN`, the PAYMENT, `COMMIT`.
    async fn payment_in_one_statement(
        &mut self,
        (by_id, by_name): (usize, usize),
        t: &Payment,
    ) -> Result<((), bool), StoreError> {
        let (st, customer) = match &t.customer {
            CustomerBy::Id(c) => (by_id, int(*c)),
            CustomerBy::Last(name) => (by_name, Param::Text(name)),
        };
        let (cw, cd) = (t.c_w_id, t.c_d_id);
        let params = [
            int(t.w_id),
            int(t.d_id),
            int(cw),
            int(cd),
            customer,
            Param::Float(t.amount),
        ];
        let mut out = self
            .conn
            .pipeline(&[Step::Begin, Step::Rows(st, &params), COMMIT])
            .await?;
        first(rows_at(&mut out, 1), || match &t.customer {
            CustomerBy::Id(c) => format!("customer {cw}/{cd}/{c}"),
            CustomerBy::Last(name) => format!("customer {cw}/{cd} named {name}"),
        })?;
        Ok(((), true))
    }

    /// Two round trips (three by name): the customer and their last
    /// order, then its lines and `COMMIT`.
    async fn order_status_body(&mut self, t: &OrderStatus) -> Result<((), bool), StoreError> {
        let (w, d) = (t.w_id, t.d_id);
        let c = match &t.customer {
            CustomerBy::Id(c) => *c,
            CustomerBy::Last(name) => {
                let key = [int(w), int(d), Param::Text(name)];
                let mut out = self
                    .conn
                    .pipeline(&[Step::Begin, Step::Rows(self.st.c_by_name, &key)])
                    .await?;
                middle(&rows_at(&mut out, 1), w, d, name)?
            }
        };
        let key = [int(w), int(d), int(c)];
        let mut steps = vec![
            Step::Rows(self.st.os_c, &key),
            Step::Rows(self.st.os_o, &key),
        ];
        if matches!(t.customer, CustomerBy::Id(_)) {
            steps.insert(0, Step::Begin);
        }
        let at = steps.len() - 2;
        let mut out = self.conn.pipeline(&steps).await?;
        first(rows_at(&mut out, at), || format!("customer {w}/{d}/{c}"))?;
        let o = first(rows_at(&mut out, at + 1), || {
            format!("an order of customer {w}/{d}/{c}")
        })?;
        let o_id = o[0].int().unwrap_or(0) as u64;
        let order = [int(w), int(d), int(o_id)];
        let mut out = self
            .conn
            .pipeline(&[Step::Rows(self.st.os_ol, &order), COMMIT])
            .await?;
        // An order has O_OL_CNT lines (clause 1.3.1), written with it in
        // NEW ORDER's transaction: fewer is a truncated answer.
        let want = o.get(3).and_then(Cell::int).unwrap_or(0).max(0) as u64;
        let got = rows_at(&mut out, 0).len() as u64;
        if got < want {
            return Err(StoreError::Short {
                got,
                want,
                what: format!("order lines of order {w}/{d}/{o_id}"),
            });
        }
        Ok(((), true))
    }

    /// The oldest new order of each district: found and deleted, then
    /// the order, its lines and its sum in one round trip, then the
    /// customer; on PostgreSQL every district at once, in one round trip.
    async fn delivery_body(&mut self, t: &Delivery) -> Result<((), bool), StoreError> {
        let w = t.w_id;
        if let Some(st) = self.st.dl_district {
            return self.delivery_in_one_pipeline(st, t).await;
        }
        self.conn.pipeline(&[Step::Begin]).await?;
        for d in 1..=DISTRICTS {
            let Some(o) = self.take_new_order(w, d).await? else {
                continue;
            };
            let key = [int(w), int(d), int(o)];
            let carrier = [int(t.carrier_id), key[0], key[1], key[2]];
            let mut out = self
                .conn
                .pipeline(&[
                    Step::Rows(self.st.dl_o, &key),
                    Step::Exec(self.st.dl_o_up, &carrier),
                    Step::Exec(self.st.dl_ol_up, &key),
                    Step::Rows(self.st.dl_ol_sum, &key),
                ])
                .await?;
            let order = first(rows_at(&mut out, 0), || format!("order {w}/{d}/{o}"))?;
            let c = order[0].int().unwrap_or(0) as u64;
            let sum = rows_at(&mut out, 3);
            let amount = sum.first().and_then(|r| r[0].float()).unwrap_or(0.0);
            self.conn
                .exec(
                    self.st.dl_c_up,
                    &[Param::Float(amount), int(w), int(d), int(c)],
                )
                .await?;
        }
        self.conn.text("COMMIT").await?;
        Ok(((), true))
    }

    /// PostgreSQL: one round trip, every district's delivery a statement.
    async fn delivery_in_one_pipeline(
        &mut self,
        st: usize,
        t: &Delivery,
    ) -> Result<((), bool), StoreError> {
        let keys: Vec<[Param; 3]> = (1..=DISTRICTS)
            .map(|d| [int(t.w_id), int(d), int(t.carrier_id)])
            .collect();
        let mut steps = vec![Step::Begin];
        steps.extend(keys.iter().map(|k| Step::Exec(st, k)));
        steps.push(COMMIT);
        self.conn.pipeline(&steps).await?;
        Ok(((), true))
    }

    /// The oldest new order of district `w`/`d`, deleted. Another
    /// DELIVERY may take it first: look again a few times, then skip the
    /// district (clause 2.7.4.2).
    async fn take_new_order(&mut self, w: u64, d: u64) -> Result<Option<u64>, StoreError> {
        for _ in 0..3 {
            let rows = self.conn.rows(self.st.dl_no, &[int(w), int(d)]).await?;
            let Some(id) = rows.first().and_then(|r| r[0].int()) else {
                continue;
            };
            let gone = self
                .conn
                .exec(self.st.dl_no_del, &[int(w), int(d), Param::Int(id)])
                .await?;
            if gone == 1 {
                return Ok(Some(id as u64));
            }
        }
        Ok(None)
    }

    /// Two round trips: the district's next order id, then the count and
    /// `COMMIT`.
    async fn stock_level_body(&mut self, t: &StockLevel) -> Result<((), bool), StoreError> {
        let (w, d) = (t.w_id, t.d_id);
        let dp = [int(w), int(d)];
        let mut out = self
            .conn
            .pipeline(&[Step::Begin, Step::Rows(self.st.sl_d, &dp)])
            .await?;
        let dist = first(rows_at(&mut out, 1), || format!("district {w}/{d}"))?;
        let next = dist[0].int().unwrap_or(0) as u64;
        let count = [
            int(w),
            int(d),
            int(next),
            int(next.saturating_sub(20)),
            int(w),
            int(t.threshold),
        ];
        // One aggregate row, counted by the server: no answer size to check.
        self.conn
            .pipeline(&[Step::Rows(self.st.sl_count, &count), COMMIT])
            .await?;
        Ok(((), true))
    }
}

impl TpccConn for SqlTerminal {
    async fn new_order(&mut self, t: &NewOrder) -> Result<NewOrderEnd, StoreError> {
        let r = self.new_order_body(t).await;
        self.finish(r).await
    }
    async fn payment(&mut self, t: &Payment) -> Result<(), StoreError> {
        let r = self.payment_body(t).await;
        self.finish(r).await
    }
    async fn order_status(&mut self, t: &OrderStatus) -> Result<(), StoreError> {
        let r = self.order_status_body(t).await;
        self.finish(r).await
    }
    async fn delivery(&mut self, t: &Delivery) -> Result<(), StoreError> {
        let r = self.delivery_body(t).await;
        self.finish(r).await
    }
    async fn stock_level(&mut self, t: &StockLevel) -> Result<(), StoreError> {
        let r = self.stock_level_body(t).await;
        self.finish(r).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(supply_w_id: u64, i_id: u64, quantity: u64) -> Line {
        Line {
            i_id,
            supply_w_id,
            quantity,
        }
    }

    #[test]
    fn lines_of_one_stock_row_are_one_change() {
        let lines = [line(1, 5, 3), line(1, 9, 2), line(1, 9, 4), line(2, 9, 1)];
        let got = stock_changes(&lines);
        let keys: Vec<(u64, u64, usize, usize)> =
            got.iter().map(|c| (c.w, c.i, c.first, c.count)).collect();
        assert_eq!(keys, [(1, 5, 0, 1), (1, 9, 1, 2), (2, 9, 3, 1)]);
    }

    #[test]
    fn stock_below_ten_after_a_line_is_restocked_by_91() {
        assert_eq!(quantity_left(50, 5), 45);
        assert_eq!(quantity_left(15, 5), 10);
        assert_eq!(quantity_left(14, 5), 100);
        // Two lines of one item, one after the other.
        assert_eq!(quantity_left(quantity_left(20, 8), 5), 98);
    }

    #[test]
    fn multi_row_statements_have_a_placeholder_per_value() {
        for d in [Dialect::Postgres, Dialect::Mysql] {
            let count = |m: Multi, n| m.sql(d, n).matches('?').count();
            assert_eq!(count(Multi::Items, 7), 7);
            assert_eq!(count(Multi::Stock, 7), 1 + 2 * 7);
            assert_eq!(count(Multi::StockUp, 7), 6 * 7);
            assert_eq!(count(Multi::Lines, 7), 9 * 7);
        }
    }
}

//! TPC-C on PostgreSQL and MySQL/MariaDB: the relational schema, a load of
//! multi-row `INSERT`s, and the five transactions as prepared statements
//! inside `BEGIN`/`COMMIT`. Rows a transaction changes are locked (`FOR
//! UPDATE`) before they are read for the change, in one order (district,
//! then stock by supply warehouse and item), so concurrent terminals
//! rarely deadlock; a deadlock the server breaks is run again by the
//! terminal.

use super::loader::{Dates, Rows};
use super::schema::{Dialect, TABLES};
use super::txn::{
    CustomerBy, Delivery, NewOrder, NewOrderEnd, OrderStatus, Payment, StockLevel, TpccConn,
};
use super::{DISTRICTS, TpccStore};
use crate::clients::mysql::MyConn;
use crate::clients::postgres::PgConn;
use crate::clients::{Cell, ClientError, Endpoint, Param};
use crate::workload::stores::StoreError;
use crate::workload::stores::sql::MAX_PARAMS;
use std::collections::BTreeMap;
use std::future::Future;

/// Database used on MySQL when the URL names none.
pub const MYSQL_DB: &str = "tpcc";
/// Most rows in one load `INSERT`.
const LOAD_ROWS: usize = 1000;

/// What the TPC-C code needs of a SQL connection.
pub trait SqlConn: Send + 'static {
    fn prepare(&mut self, sql: &str) -> impl Future<Output = Result<usize, ClientError>> + Send;
    fn rows(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, ClientError>> + Send;
    /// Rows changed.
    fn exec(
        &mut self,
        id: usize,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<u64, ClientError>> + Send;
    /// A statement without parameters (`BEGIN`, DDL).
    fn text(&mut self, sql: &str) -> impl Future<Output = Result<(), ClientError>> + Send;
    /// The rows of a query without parameters.
    fn select(
        &mut self,
        sql: &str,
    ) -> impl Future<Output = Result<Vec<Vec<Cell>>, ClientError>> + Send;
}

impl SqlConn for PgConn {
    async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        PgConn::prepare(self, sql).await
    }
    async fn rows(&mut self, id: usize, p: &[Param<'_>]) -> Result<Vec<Vec<Cell>>, ClientError> {
        self.query_rows(id, p).await
    }
    async fn exec(&mut self, id: usize, p: &[Param<'_>]) -> Result<u64, ClientError> {
        self.execute(id, p).await
    }
    async fn text(&mut self, sql: &str) -> Result<(), ClientError> {
        self.batch(sql).await
    }
    async fn select(&mut self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        PgConn::select(self, sql).await
    }
}

impl SqlConn for MyConn {
    async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        MyConn::prepare(self, sql).await
    }
    async fn rows(&mut self, id: usize, p: &[Param<'_>]) -> Result<Vec<Vec<Cell>>, ClientError> {
        self.query_rows(id, p).await
    }
    async fn exec(&mut self, id: usize, p: &[Param<'_>]) -> Result<u64, ClientError> {
        self.execute(id, p).await
    }
    async fn text(&mut self, sql: &str) -> Result<(), ClientError> {
        self.exec_text(sql).await
    }
    async fn select(&mut self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        MyConn::select(self, sql).await
    }
}

/// TPC-C tables in PostgreSQL or MySQL.
pub struct SqlTpcc {
    pub ep: Endpoint,
    pub dialect: Dialect,
    /// MySQL storage engine.
    pub engine: Option<String>,
}

/// A PostgreSQL or MySQL connection.
pub enum AnySql {
    Pg(PgConn),
    My(MyConn),
}

impl SqlConn for AnySql {
    async fn prepare(&mut self, sql: &str) -> Result<usize, ClientError> {
        match self {
            AnySql::Pg(c) => SqlConn::prepare(c, sql).await,
            AnySql::My(c) => SqlConn::prepare(c, sql).await,
        }
    }
    async fn rows(&mut self, id: usize, p: &[Param<'_>]) -> Result<Vec<Vec<Cell>>, ClientError> {
        match self {
            AnySql::Pg(c) => c.rows(id, p).await,
            AnySql::My(c) => c.rows(id, p).await,
        }
    }
    async fn exec(&mut self, id: usize, p: &[Param<'_>]) -> Result<u64, ClientError> {
        match self {
            AnySql::Pg(c) => c.exec(id, p).await,
            AnySql::My(c) => c.exec(id, p).await,
        }
    }
    async fn text(&mut self, sql: &str) -> Result<(), ClientError> {
        match self {
            AnySql::Pg(c) => c.text(sql).await,
            AnySql::My(c) => c.text(sql).await,
        }
    }
    async fn select(&mut self, sql: &str) -> Result<Vec<Vec<Cell>>, ClientError> {
        match self {
            AnySql::Pg(c) => SqlConn::select(c, sql).await,
            AnySql::My(c) => SqlConn::select(c, sql).await,
        }
    }
}

impl SqlTpcc {
    /// The endpoint with its database: MySQL's defaults to `tpcc`.
    fn db_endpoint(&self) -> Endpoint {
        let mut ep = self.ep.clone();
        if self.dialect == Dialect::Mysql {
            ep.database.get_or_insert_with(|| MYSQL_DB.into());
        }
        ep
    }

    /// A plain connection to the TPC-C database.
    pub async fn raw(&self) -> Result<AnySql, StoreError> {
        let ep = self.db_endpoint();
        Ok(match self.dialect {
            Dialect::Postgres => AnySql::Pg(PgConn::connect(&ep).await?),
            Dialect::Mysql => AnySql::My(MyConn::connect(&ep).await?),
        })
    }

    fn db_name(&self) -> String {
        self.db_endpoint()
            .database
            .unwrap_or_else(|| "postgres".into())
    }
}

impl TpccStore for SqlTpcc {
    type Conn = SqlTerminal;
    type Loader = SqlLoader;

    async fn connect(&self) -> Result<SqlTerminal, StoreError> {
        SqlTerminal::prepare(self.raw().await?, self.dialect).await
    }

    async fn loader(&self) -> Result<SqlLoader, StoreError> {
        Ok(SqlLoader {
            conn: self.raw().await?,
            dialect: self.dialect,
            inserts: BTreeMap::new(),
        })
    }

    async fn holds_data(&self) -> Result<Option<String>, StoreError> {
        let db = self.db_name();
        let mut bare = self.ep.clone();
        let exists = match self.dialect {
            Dialect::Postgres => {
                crate::clients::postgres::query_text(&bare, "SELECT to_regclass('warehouse')::text")
                    .await?
            }
            Dialect::Mysql => {
                bare.database = None;
                let literal = db.replace('\\', "\\\\").replace('\'', "''");
                let n = crate::clients::mysql::query_text(
                    &bare,
                    &format!(
                        "SELECT COUNT(*) FROM information_schema.tables \
                         WHERE table_schema = '{literal}' AND table_name = 'warehouse'"
                    ),
                )
                .await?;
                if n.trim() == "0" { String::new() } else { n }
            }
        };
        if exists.is_empty() {
            return Ok(None);
        }
        let mut c = self.raw().await?;
        let any = c
            .select("SELECT COUNT(*) FROM (SELECT 1 FROM warehouse LIMIT 1) one")
            .await?;
        let rows = any.first().and_then(|r| r.first()).and_then(Cell::int);
        Ok((rows != Some(0)).then(|| {
            format!(
                "{} at {} holds TPC-C tables with rows in database {db} (a load drops them)",
                match self.dialect {
                    Dialect::Postgres => "postgres",
                    Dialect::Mysql => "mysql",
                },
                self.ep.addr()
            )
        }))
    }

    async fn recreate(&self) -> Result<(), StoreError> {
        if self.dialect == Dialect::Mysql {
            let mut bare = self.ep.clone();
            bare.database = None;
            let mut c = MyConn::connect(&bare).await?;
            c.exec_text(&format!(
                "CREATE DATABASE IF NOT EXISTS `{}`",
                self.db_name().replace('`', "``")
            ))
            .await?;
        }
        let mut c = self.raw().await?;
        for t in TABLES {
            c.text(&format!("DROP TABLE IF EXISTS {}", t.name)).await?;
            for stmt in self.dialect.create(t, self.engine.as_deref()) {
                c.text(&stmt).await?;
            }
        }
        Ok(())
    }

    async fn check(&self) -> Result<Vec<String>, StoreError> {
        let mut c = self.raw().await?;
        super::check::sql(&mut c).await
    }

    async fn data_rows(&self) -> Result<BTreeMap<&'static str, u64>, StoreError> {
        let mut c = self.raw().await?;
        let mut out = BTreeMap::new();
        for t in TABLES {
            let r = c
                .select(&format!("SELECT COUNT(*) FROM {}", t.name))
                .await?;
            let n = r.first().and_then(|r| r.first()).and_then(Cell::int);
            out.insert(t.name, n.unwrap_or(0) as u64);
        }
        Ok(out)
    }
}

/// A connection that inserts load batches, each as multi-row `INSERT`s
/// prepared once per table, date fill and row count.
pub struct SqlLoader {
    conn: AnySql,
    dialect: Dialect,
    inserts: BTreeMap<(&'static str, Dates, usize), usize>,
}

impl super::TpccLoader for SqlLoader {
    async fn insert(&mut self, batches: &[Rows]) -> Result<(), StoreError> {
        for b in batches {
            self.insert_table(b).await?;
        }
        Ok(())
    }
}

impl SqlLoader {
    /// Inserts one table's rows.
    async fn insert_table(&mut self, batch: &Rows) -> Result<(), StoreError> {
        let cols: Vec<&str> = batch.columns().collect();
        let dates: Vec<&str> = batch.date_columns().collect();
        let per_stmt = (MAX_PARAMS / cols.len().max(1)).min(LOAD_ROWS);
        for chunk in batch.rows.chunks(per_stmt) {
            let key = (batch.table.name, batch.dates, chunk.len());
            let st = match self.inserts.get(&key) {
                Some(s) => *s,
                None => {
                    let fill = match batch.dates {
                        Dates::Now => "CURRENT_TIMESTAMP",
                        Dates::Null => "NULL",
                    };
                    let mut row = vec!["?"; cols.len()];
                    row.extend(std::iter::repeat_n(fill, dates.len()));
                    let row = format!("({})", row.join(", "));
                    let names: Vec<&str> = cols.iter().chain(dates.iter()).copied().collect();
                    let sql = format!(
                        "INSERT INTO {} ({}) VALUES {}",
                        batch.table.name,
                        names.join(", "),
                        vec![row; chunk.len()].join(", ")
                    );
                    let s = self.conn.prepare(&self.dialect.marks(&sql)).await?;
                    self.inserts.insert(key, s);
                    s
                }
            };
            let params: Vec<Param> = chunk.iter().flatten().map(param).collect();
            self.conn.exec(st, &params).await?;
        }
        Ok(())
    }
}

fn param(c: &Cell) -> Param<'_> {
    match c {
        Cell::Int(i) => Param::Int(*i),
        Cell::Float(f) => Param::Float(*f),
        Cell::Text(t) => Param::Text(t),
        Cell::Null => Param::Null,
    }
}

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
    /// Per district: its `s_dist_NN` column.
    no_s: Vec<usize>,
    no_s_up: usize,
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
    sl_d: usize,
    sl_count: usize,
}

/// One terminal's connection with the statements prepared.
pub struct SqlTerminal {
    conn: AnySql,
    dialect: Dialect,
    st: Statements,
    /// `SELECT ... FROM item WHERE i_id IN (...)` per line count.
    items_in: BTreeMap<usize, usize>,
    /// Multi-row `INSERT INTO order_line` per line count.
    lines_in: BTreeMap<usize, usize>,
}

impl SqlTerminal {
    async fn prepare(mut conn: AnySql, dialect: Dialect) -> Result<SqlTerminal, StoreError> {
        let mut p = async |sql: &str| conn.prepare(&dialect.marks(sql)).await;
        let c_where = "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?";
        let mut no_s = Vec::new();
        for d in 1..=DISTRICTS {
            no_s.push(
                p(&format!(
                    "SELECT s_quantity, s_data, s_dist_{d:02} FROM stock \
                     WHERE s_i_id = ? AND s_w_id = ? FOR UPDATE"
                ))
                .await?,
            );
        }
        let st = Statements {
            no_s,
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
            no_s_up: p("UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, \
                        s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ? \
                        WHERE s_i_id = ? AND s_w_id = ?")
            .await?,
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
            os_o: p("SELECT o_id, o_carrier_id, o_entry_d FROM orders \
                     WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1")
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
            items_in: BTreeMap::new(),
            lines_in: BTreeMap::new(),
        })
    }

    /// Runs `body`'s outcome to its end: `COMMIT` when it asks, else
    /// `ROLLBACK` (a failed or rolled-back transaction).
    async fn finish<T>(&mut self, r: Result<(T, bool), StoreError>) -> Result<T, StoreError> {
        match r {
            Ok((v, true)) => {
                self.conn.text("COMMIT").await?;
                Ok(v)
            }
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

    async fn prepared_in(&mut self, lines: bool, n: usize) -> Result<usize, StoreError> {
        let cache = if lines {
            &mut self.lines_in
        } else {
            &mut self.items_in
        };
        if let Some(s) = cache.get(&n) {
            return Ok(*s);
        }
        let sql = if lines {
            let row = "(?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)";
            format!(
                "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, \
                 ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES {}",
                vec![row; n].join(", ")
            )
        } else {
            format!(
                "SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN ({})",
                vec!["?"; n].join(", ")
            )
        };
        let s = self.conn.prepare(&self.dialect.marks(&sql)).await?;
        let cache = if lines {
            &mut self.lines_in
        } else {
            &mut self.items_in
        };
        cache.insert(n, s);
        Ok(s)
    }

    /// One row of `id`, or `NotFound(what)`.
    async fn one(
        &mut self,
        id: usize,
        params: &[Param<'_>],
        what: impl FnOnce() -> String,
    ) -> Result<Vec<Cell>, StoreError> {
        let mut rows = self.conn.rows(id, params).await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound(what()));
        }
        Ok(rows.swap_remove(0))
    }

    /// The customer's id: given, or the middle one by first name of those
    /// with the last name.
    async fn customer_id(&mut self, w: u64, d: u64, by: &CustomerBy) -> Result<u64, StoreError> {
        match by {
            CustomerBy::Id(id) => Ok(*id),
            CustomerBy::Last(name) => {
                let rows = self
                    .conn
                    .rows(self.st.c_by_name, &[int(w), int(d), Param::Text(name)])
                    .await?;
                if rows.is_empty() {
                    return Err(StoreError::NotFound(format!(
                        "customer {w}/{d} named {name}"
                    )));
                }
                let mid = rows.len().div_ceil(2) - 1;
                Ok(rows[mid][0].int().unwrap_or(0) as u64)
            }
        }
    }

    async fn new_order_body(&mut self, t: &NewOrder) -> Result<(NewOrderEnd, bool), StoreError> {
        let n = t.lines.len();
        let st = self.prepared_in(false, n).await?;
        let ids: Vec<Param> = t.lines.iter().map(|l| int(l.i_id)).collect();
        let items = self.conn.rows(st, &ids).await?;
        let mut prices = Vec::with_capacity(n);
        for l in &t.lines {
            match items.iter().find(|r| r[0].int() == Some(l.i_id as i64)) {
                Some(r) => prices.push(r[1].float().unwrap_or(0.0)),
                None => return Ok((NewOrderEnd::RolledBack, false)),
            }
        }
        let (w, d) = (t.w_id, t.d_id);
        let wh = self
            .one(self.st.no_w, &[int(w)], || format!("warehouse {w}"))
            .await?;
        let dist = self
            .one(self.st.no_d, &[int(w), int(d)], || {
                format!("district {w}/{d}")
            })
            .await?;
        let o_id = dist[1].int().unwrap_or(0) as u64;
        self.conn.exec(self.st.no_d_up, &[int(w), int(d)]).await?;
        let c = t.c_id;
        let cust = self
            .one(self.st.no_c, &[int(w), int(d), int(c)], || {
                format!("customer {w}/{d}/{c}")
            })
            .await?;
        self.conn
            .exec(
                self.st.no_o,
                &[
                    int(o_id),
                    int(d),
                    int(w),
                    int(c),
                    int(n as u64),
                    int(t.all_local as u64),
                ],
            )
            .await?;
        self.conn
            .exec(self.st.no_no, &[int(o_id), int(d), int(w)])
            .await?;
        let no_s = self.st.no_s[d as usize - 1];
        let mut dist_info = Vec::with_capacity(n);
        let mut total = 0.0;
        for (l, price) in t.lines.iter().zip(&prices) {
            let (i, sw) = (l.i_id, l.supply_w_id);
            let s = self
                .one(no_s, &[int(i), int(sw)], || format!("stock {sw}/{i}"))
                .await?;
            let q = s[0].int().unwrap_or(0) as u64;
            let left = if q >= l.quantity + 10 {
                q - l.quantity
            } else {
                q + 91 - l.quantity
            };
            let remote = (sw != w) as u64;
            self.conn
                .exec(
                    self.st.no_s_up,
                    &[int(left), int(l.quantity), int(remote), int(i), int(sw)],
                )
                .await?;
            dist_info.push(s[2].text().to_string());
            total += l.quantity as f64 * price;
        }
        let st = self.prepared_in(true, n).await?;
        let mut params = Vec::with_capacity(n * 9);
        for (k, ((l, price), info)) in t.lines.iter().zip(&prices).zip(&dist_info).enumerate() {
            params.extend([
                int(o_id),
                int(d),
                int(w),
                int(k as u64 + 1),
                int(l.i_id),
                int(l.supply_w_id),
                int(l.quantity),
                Param::Float((l.quantity as f64 * price * 100.0).round() / 100.0),
                Param::Text(info),
            ]);
        }
        self.conn.exec(st, &params).await?;
        // The order's total (clause 2.4.2.2), as the terminal would show it.
        let rates = wh[0].float().unwrap_or(0.0) + dist[0].float().unwrap_or(0.0);
        let _shown = total * (1.0 - cust[0].float().unwrap_or(0.0)) * (1.0 + rates);
        Ok((NewOrderEnd::Committed, true))
    }

    async fn payment_body(&mut self, t: &Payment) -> Result<((), bool), StoreError> {
        let (w, d, a) = (t.w_id, t.d_id, t.amount);
        self.conn
            .exec(self.st.p_w_up, &[Param::Float(a), int(w)])
            .await?;
        let wh = self
            .one(self.st.p_w, &[int(w)], || format!("warehouse {w}"))
            .await?;
        self.conn
            .exec(self.st.p_d_up, &[Param::Float(a), int(w), int(d)])
            .await?;
        let dist = self
            .one(self.st.p_d, &[int(w), int(d)], || {
                format!("district {w}/{d}")
            })
            .await?;
        let (cw, cd) = (t.c_w_id, t.c_d_id);
        let c = self.customer_id(cw, cd, &t.customer).await?;
        let key = [int(cw), int(cd), int(c)];
        let cust = self
            .one(self.st.p_c, &key, || format!("customer {cw}/{cd}/{c}"))
            .await?;
        if cust[9].text() == "BC" {
            let old = self
                .one(self.st.p_c_data, &key, || format!("customer {cw}/{cd}/{c}"))
                .await?;
            let mut data = format!("{c} {cd} {cw} {d} {w} {a:.2} | {}", old[0].text());
            data.truncate(500);
            self.conn
                .exec(
                    self.st.p_c_up_bc,
                    &[
                        Param::Float(a),
                        Param::Float(a),
                        Param::Text(&data),
                        key[0],
                        key[1],
                        key[2],
                    ],
                )
                .await?;
        } else {
            self.conn
                .exec(
                    self.st.p_c_up,
                    &[Param::Float(a), Param::Float(a), key[0], key[1], key[2]],
                )
                .await?;
        }
        let h_data = format!("{}    {}", wh[0].text(), dist[0].text());
        self.conn
            .exec(
                self.st.p_h,
                &[
                    int(c),
                    int(cd),
                    int(cw),
                    int(d),
                    int(w),
                    Param::Float(a),
                    Param::Text(&h_data),
                ],
            )
            .await?;
        Ok(((), true))
    }

    async fn order_status_body(&mut self, t: &OrderStatus) -> Result<((), bool), StoreError> {
        let (w, d) = (t.w_id, t.d_id);
        let c = self.customer_id(w, d, &t.customer).await?;
        self.one(self.st.os_c, &[int(w), int(d), int(c)], || {
            format!("customer {w}/{d}/{c}")
        })
        .await?;
        let o = self
            .one(self.st.os_o, &[int(w), int(d), int(c)], || {
                format!("an order of customer {w}/{d}/{c}")
            })
            .await?;
        let o_id = o[0].int().unwrap_or(0) as u64;
        self.conn
            .rows(self.st.os_ol, &[int(w), int(d), int(o_id)])
            .await?;
        Ok(((), true))
    }

    async fn delivery_body(&mut self, t: &Delivery) -> Result<((), bool), StoreError> {
        let w = t.w_id;
        for d in 1..=DISTRICTS {
            // Another DELIVERY may take the oldest new order first: look
            // again a few times, then skip the district (clause 2.7.4.2).
            let mut o_id = None;
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
                    o_id = Some(id as u64);
                    break;
                }
            }
            let Some(o) = o_id else { continue };
            let key = [int(w), int(d), int(o)];
            let order = self
                .one(self.st.dl_o, &key, || format!("order {w}/{d}/{o}"))
                .await?;
            let c = order[0].int().unwrap_or(0) as u64;
            self.conn
                .exec(
                    self.st.dl_o_up,
                    &[int(t.carrier_id), key[0], key[1], key[2]],
                )
                .await?;
            self.conn.exec(self.st.dl_ol_up, &key).await?;
            let sum = self.conn.rows(self.st.dl_ol_sum, &key).await?;
            let amount = sum.first().and_then(|r| r[0].float()).unwrap_or(0.0);
            self.conn
                .exec(
                    self.st.dl_c_up,
                    &[Param::Float(amount), int(w), int(d), int(c)],
                )
                .await?;
        }
        Ok(((), true))
    }

    async fn stock_level_body(&mut self, t: &StockLevel) -> Result<((), bool), StoreError> {
        let (w, d) = (t.w_id, t.d_id);
        let dist = self
            .one(self.st.sl_d, &[int(w), int(d)], || {
                format!("district {w}/{d}")
            })
            .await?;
        let next = dist[0].int().unwrap_or(0) as u64;
        self.conn
            .rows(
                self.st.sl_count,
                &[
                    int(w),
                    int(d),
                    int(next),
                    int(next.saturating_sub(20)),
                    int(w),
                    int(t.threshold),
                ],
            )
            .await?;
        Ok(((), true))
    }
}

impl TpccConn for SqlTerminal {
    async fn new_order(&mut self, t: &NewOrder) -> Result<NewOrderEnd, StoreError> {
        self.conn.text("BEGIN").await?;
        let r = self.new_order_body(t).await;
        self.finish(r).await
    }
    async fn payment(&mut self, t: &Payment) -> Result<(), StoreError> {
        self.conn.text("BEGIN").await?;
        let r = self.payment_body(t).await;
        self.finish(r).await
    }
    async fn order_status(&mut self, t: &OrderStatus) -> Result<(), StoreError> {
        self.conn.text("BEGIN").await?;
        let r = self.order_status_body(t).await;
        self.finish(r).await
    }
    async fn delivery(&mut self, t: &Delivery) -> Result<(), StoreError> {
        self.conn.text("BEGIN").await?;
        let r = self.delivery_body(t).await;
        self.finish(r).await
    }
    async fn stock_level(&mut self, t: &StockLevel) -> Result<(), StoreError> {
        self.conn.text("BEGIN").await?;
        let r = self.stock_level_body(t).await;
        self.finish(r).await
    }
}

//! The nine TPC-C tables (specification clause 1.3) as data, and their
//! DDL for PostgreSQL and MySQL/MariaDB. Column names follow py-tpcc's
//! (`W_ID`, `D_NEXT_O_ID`...), in lower case.

/// A column's type, mapped to each engine's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Int,
    Small,
    /// `DECIMAL(12,2)`: amounts and balances.
    Money,
    /// `DECIMAL(4,4)`: tax and discount rates.
    Rate,
    Var(u16),
    Char(u16),
    /// A date and time, set by the server (`CURRENT_TIMESTAMP`).
    Time,
}

/// One table: columns, primary key and secondary indexes.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub cols: &'static [(&'static str, Col)],
    /// Empty for `history`, which has none.
    pub key: &'static [&'static str],
    pub indexes: &'static [(&'static str, &'static [&'static str])],
}

use Col::*;

pub const WAREHOUSE: Table = Table {
    name: "warehouse",
    cols: &[
        ("w_id", Int),
        ("w_name", Var(10)),
        ("w_street_1", Var(20)),
        ("w_street_2", Var(20)),
        ("w_city", Var(20)),
        ("w_state", Char(2)),
        ("w_zip", Char(9)),
        ("w_tax", Rate),
        ("w_ytd", Money),
    ],
    key: &["w_id"],
    indexes: &[],
};

pub const DISTRICT: Table = Table {
    name: "district",
    cols: &[
        ("d_id", Small),
        ("d_w_id", Int),
        ("d_name", Var(10)),
        ("d_street_1", Var(20)),
        ("d_street_2", Var(20)),
        ("d_city", Var(20)),
        ("d_state", Char(2)),
        ("d_zip", Char(9)),
        ("d_tax", Rate),
        ("d_ytd", Money),
        ("d_next_o_id", Int),
    ],
    key: &["d_w_id", "d_id"],
    indexes: &[],
};

pub const CUSTOMER: Table = Table {
    name: "customer",
    cols: &[
        ("c_id", Int),
        ("c_d_id", Small),
        ("c_w_id", Int),
        ("c_first", Var(16)),
        ("c_middle", Char(2)),
        ("c_last", Var(16)),
        ("c_street_1", Var(20)),
        ("c_street_2", Var(20)),
        ("c_city", Var(20)),
        ("c_state", Char(2)),
        ("c_zip", Char(9)),
        ("c_phone", Char(16)),
        ("c_since", Time),
        ("c_credit", Char(2)),
        ("c_credit_lim", Money),
        ("c_discount", Rate),
        ("c_balance", Money),
        ("c_ytd_payment", Money),
        ("c_payment_cnt", Int),
        ("c_delivery_cnt", Int),
        ("c_data", Var(500)),
    ],
    key: &["c_w_id", "c_d_id", "c_id"],
    indexes: &[("customer_name", &["c_w_id", "c_d_id", "c_last", "c_first"])],
};

pub(crate) const HISTORY: Table = Table {
    name: "history",
    cols: &[
        ("h_c_id", Int),
        ("h_c_d_id", Small),
        ("h_c_w_id", Int),
        ("h_d_id", Small),
        ("h_w_id", Int),
        ("h_date", Time),
        ("h_amount", Money),
        ("h_data", Var(24)),
    ],
    key: &[],
    indexes: &[],
};

pub const NEW_ORDER: Table = Table {
    name: "new_order",
    cols: &[("no_o_id", Int), ("no_d_id", Small), ("no_w_id", Int)],
    key: &["no_w_id", "no_d_id", "no_o_id"],
    indexes: &[],
};

pub const ORDERS: Table = Table {
    name: "orders",
    cols: &[
        ("o_id", Int),
        ("o_d_id", Small),
        ("o_w_id", Int),
        ("o_c_id", Int),
        ("o_entry_d", Time),
        ("o_carrier_id", Small),
        ("o_ol_cnt", Small),
        ("o_all_local", Small),
    ],
    key: &["o_w_id", "o_d_id", "o_id"],
    indexes: &[("orders_customer", &["o_w_id", "o_d_id", "o_c_id", "o_id"])],
};

pub const ORDER_LINE: Table = Table {
    name: "order_line",
    cols: &[
        ("ol_o_id", Int),
        ("ol_d_id", Small),
        ("ol_w_id", Int),
        ("ol_number", Small),
        ("ol_i_id", Int),
        ("ol_supply_w_id", Int),
        ("ol_delivery_d", Time),
        ("ol_quantity", Small),
        ("ol_amount", Money),
        ("ol_dist_info", Char(24)),
    ],
    key: &["ol_w_id", "ol_d_id", "ol_o_id", "ol_number"],
    indexes: &[],
};

pub const ITEM: Table = Table {
    name: "item",
    cols: &[
        ("i_id", Int),
        ("i_im_id", Int),
        ("i_name", Var(24)),
        ("i_price", Money),
        ("i_data", Var(50)),
    ],
    key: &["i_id"],
    indexes: &[],
};

pub const STOCK: Table = Table {
    name: "stock",
    cols: &[
        ("s_i_id", Int),
        ("s_w_id", Int),
        ("s_quantity", Small),
        ("s_dist_01", Char(24)),
        ("s_dist_02", Char(24)),
        ("s_dist_03", Char(24)),
        ("s_dist_04", Char(24)),
        ("s_dist_05", Char(24)),
        ("s_dist_06", Char(24)),
        ("s_dist_07", Char(24)),
        ("s_dist_08", Char(24)),
        ("s_dist_09", Char(24)),
        ("s_dist_10", Char(24)),
        ("s_ytd", Int),
        ("s_order_cnt", Small),
        ("s_remote_cnt", Small),
        ("s_data", Var(50)),
    ],
    key: &["s_w_id", "s_i_id"],
    indexes: &[],
};

/// Every table, in load order.
pub const TABLES: [&Table; 9] = [
    &ITEM,
    &WAREHOUSE,
    &STOCK,
    &DISTRICT,
    &CUSTOMER,
    &HISTORY,
    &ORDERS,
    &NEW_ORDER,
    &ORDER_LINE,
];

/// Which SQL the DDL and statements are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    /// MySQL or MariaDB, with the storage engine (`InnoDB`, `RocksDB`)
    /// when one is named.
    Mysql,
}

impl Dialect {
    fn col_type(self, c: Col) -> String {
        match c {
            Int => "INTEGER".into(),
            Small => "SMALLINT".into(),
            Money => "DECIMAL(12,2)".into(),
            Rate => "DECIMAL(4,4)".into(),
            Var(n) => format!("VARCHAR({n})"),
            Char(n) => format!("CHAR({n})"),
            Time => match self {
                Dialect::Postgres => "TIMESTAMP".into(),
                Dialect::Mysql => "DATETIME".into(),
            },
        }
    }

    /// `sql` with its `?` placeholders numbered (`$1`, `$2`) for
    /// PostgreSQL; unchanged for MySQL.
    pub fn marks(self, sql: &str) -> String {
        match self {
            Dialect::Mysql => sql.to_string(),
            Dialect::Postgres => {
                let mut out = String::with_capacity(sql.len() + 16);
                let mut n = 0;
                for ch in sql.chars() {
                    if ch == '?' {
                        n += 1;
                        out.push('$');
                        out.push_str(&n.to_string());
                    } else {
                        out.push(ch);
                    }
                }
                out
            }
        }
    }

    /// `CREATE TABLE` and `CREATE INDEX` statements of `t`; `engine` is a
    /// MySQL storage engine.
    pub fn create(self, t: &Table, engine: Option<&str>) -> Vec<String> {
        let mut cols: Vec<String> = t
            .cols
            .iter()
            .map(|(n, c)| format!("{n} {}", self.col_type(*c)))
            .collect();
        if !t.key.is_empty() {
            cols.push(format!("PRIMARY KEY ({})", t.key.join(", ")));
        }
        let suffix = match (self, engine) {
            (Dialect::Mysql, Some(e)) => format!(" ENGINE={e}"),
            _ => String::new(),
        };
        let mut out = vec![format!(
            "CREATE TABLE {} ({}){suffix}",
            t.name,
            cols.join(", ")
        )];
        for (name, on) in t.indexes {
            out.push(format!(
                "CREATE INDEX {name} ON {} ({})",
                t.name,
                on.join(", ")
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_placeholders_are_numbered_in_order() {
        assert_eq!(
            Dialect::Postgres.marks("SELECT a FROM t WHERE b = ? AND c = ?"),
            "SELECT a FROM t WHERE b = $1 AND c = $2"
        );
        assert_eq!(Dialect::Mysql.marks("b = ?"), "b = ?");
    }

    #[test]
    fn ddl_has_the_key_the_indexes_and_the_engine() {
        let d = Dialect::Mysql.create(&CUSTOMER, Some("RocksDB"));
        assert!(d[0].contains("PRIMARY KEY (c_w_id, c_d_id, c_id)) ENGINE=RocksDB"));
        assert!(d[0].contains("c_since DATETIME"));
        assert_eq!(
            d[1],
            "CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)"
        );
        let h = Dialect::Postgres.create(&HISTORY, None);
        assert!(!h[0].contains("PRIMARY KEY") && h[0].contains("h_date TIMESTAMP"));
    }
}

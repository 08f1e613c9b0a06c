//! The five transactions' inputs (specification clauses 2.4 to 2.8), the
//! terminal that draws them in the standard mix, and the trait each store
//! implements to run them.

use super::random::{self, Constants, TpccRng};
use super::{CUSTOMERS, DISTRICTS, ITEMS};
use crate::model::TxnMode;
use crate::workload::stores::StoreError;
use std::future::Future;

/// Transaction kinds, in the order of [`super::NAMES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    NewOrder = 0,
    Payment = 1,
    OrderStatus = 2,
    Delivery = 3,
    StockLevel = 4,
}

/// The standard mix in percent: NEW ORDER 45, PAYMENT 43, ORDER STATUS,
/// DELIVERY and STOCK LEVEL 4 each.
pub const MIX: [(Kind, u64); 5] = [
    (Kind::NewOrder, 45),
    (Kind::Payment, 43),
    (Kind::OrderStatus, 4),
    (Kind::Delivery, 4),
    (Kind::StockLevel, 4),
];

/// An item id no item has: the last line of a NEW ORDER that rolls back.
pub(crate) const UNUSED_ITEM: u64 = ITEMS + 1;

/// One order line of a NEW ORDER.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub i_id: u64,
    pub supply_w_id: u64,
    pub quantity: u64,
}

/// NEW ORDER (clause 2.4.1).
#[derive(Debug, Clone, Default)]
pub struct NewOrder {
    pub w_id: u64,
    pub d_id: u64,
    pub c_id: u64,
    /// 5 to 15 lines, sorted by supply warehouse and item so concurrent
    /// orders lock stock rows in one order (no deadlocks among them).
    pub lines: Vec<Line>,
    /// Every line is supplied by the home warehouse.
    pub all_local: bool,
}

/// How PAYMENT and ORDER STATUS find their customer.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomerBy {
    Id(u64),
    /// The middle one (n/2 rounded up) of those with this last name,
    /// sorted by first name.
    Last(String),
}

impl Default for CustomerBy {
    fn default() -> Self {
        CustomerBy::Id(1)
    }
}

/// PAYMENT (clause 2.5.1).
#[derive(Debug, Clone, Default)]
pub struct Payment {
    pub w_id: u64,
    pub d_id: u64,
    pub c_w_id: u64,
    pub c_d_id: u64,
    pub customer: CustomerBy,
    pub amount: f64,
}

/// ORDER STATUS (clause 2.6.1).
#[derive(Debug, Clone, Default)]
pub struct OrderStatus {
    pub w_id: u64,
    pub d_id: u64,
    pub customer: CustomerBy,
}

/// DELIVERY (clause 2.7.1): the oldest new order of every district.
#[derive(Debug, Clone, Default)]
pub struct Delivery {
    pub w_id: u64,
    pub carrier_id: u64,
}

/// STOCK LEVEL (clause 2.8.1).
#[derive(Debug, Clone, Default)]
pub struct StockLevel {
    pub w_id: u64,
    pub d_id: u64,
    pub threshold: u64,
}

/// How a NEW ORDER ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewOrderEnd {
    Committed,
    /// An item was not found: rolled back, as 1% are meant to.
    RolledBack,
}

/// A connection that runs the five transactions, each as one transaction
/// of the store (or, without multi-document transactions, py-tpcc's
/// sequence of single-document writes).
pub trait TpccConn: Send + 'static {
    fn new_order(
        &mut self,
        t: &NewOrder,
    ) -> impl Future<Output = Result<NewOrderEnd, StoreError>> + Send;
    fn payment(&mut self, t: &Payment) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn order_status(
        &mut self,
        t: &OrderStatus,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn delivery(&mut self, t: &Delivery) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn stock_level(
        &mut self,
        t: &StockLevel,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// How MongoDB runs this terminal's transactions, as its server
    /// allows; `None` on the SQL stores, which always run them as
    /// transactions.
    fn transactions(&self) -> Option<TxnMode> {
        None
    }
}

/// One terminal: a home warehouse and district, and the inputs it drew
/// for the transaction it runs next (buffers reused).
#[derive(Debug, Clone)]
pub(crate) struct Terminal {
    pub rng: TpccRng,
    pub warehouses: u64,
    pub w_id: u64,
    /// The district STOCK LEVEL reports on (fixed per terminal).
    pub d_id: u64,
    pub new_order: NewOrder,
    pub payment: Payment,
    pub order_status: OrderStatus,
    pub delivery: Delivery,
    pub stock_level: StockLevel,
}

impl Terminal {
    /// Terminal `i` of `warehouses`: terminals spread over the
    /// warehouses, then over their districts.
    pub fn new(seed: u64, i: u64, warehouses: u64) -> Terminal {
        Terminal {
            rng: TpccRng::new(seed, 0x7bcc ^ i),
            warehouses,
            w_id: i % warehouses + 1,
            d_id: (i / warehouses) % DISTRICTS + 1,
            new_order: NewOrder::default(),
            payment: Payment::default(),
            order_status: OrderStatus::default(),
            delivery: Delivery::default(),
            stock_level: StockLevel::default(),
        }
    }

    /// Draws the next transaction in the mix and its inputs.
    pub(crate) fn draw(&mut self) -> Kind {
        let mut roll = self.rng.uniform(1, 100);
        let mut kind = Kind::NewOrder;
        for (k, share) in MIX {
            if roll <= share {
                kind = k;
                break;
            }
            roll -= share;
        }
        let k = random::RUN;
        match kind {
            Kind::NewOrder => self.draw_new_order(&k),
            Kind::Payment => self.draw_payment(&k),
            Kind::OrderStatus => {
                self.order_status = OrderStatus {
                    w_id: self.w_id,
                    d_id: self.rng.uniform(1, DISTRICTS),
                    customer: self.customer(&k),
                }
            }
            Kind::Delivery => {
                self.delivery = Delivery {
                    w_id: self.w_id,
                    carrier_id: self.rng.uniform(1, 10),
                }
            }
            Kind::StockLevel => {
                self.stock_level = StockLevel {
                    w_id: self.w_id,
                    d_id: self.d_id,
                    threshold: self.rng.uniform(10, 20),
                }
            }
        }
        kind
    }

    /// 60% by last name, 40% by id (clause 2.5.1.2).
    fn customer(&mut self, k: &Constants) -> CustomerBy {
        if self.rng.uniform(1, 100) <= 60 {
            CustomerBy::Last(random::last_name(self.rng.last_name_number(k, 1000)))
        } else {
            CustomerBy::Id(self.rng.customer_id(k, CUSTOMERS))
        }
    }

    /// Another warehouse than the home one (only asked when there are two
    /// or more).
    fn remote_warehouse(&mut self) -> u64 {
        let other = self.rng.uniform(1, self.warehouses - 1);
        if other >= self.w_id { other + 1 } else { other }
    }

    fn draw_new_order(&mut self, k: &Constants) {
        let n = self.rng.uniform(5, 15) as usize;
        let rollback = self.rng.uniform(1, 100) == 1;
        let mut t = std::mem::take(&mut self.new_order);
        t.w_id = self.w_id;
        t.d_id = self.rng.uniform(1, DISTRICTS);
        t.c_id = self.rng.customer_id(k, CUSTOMERS);
        t.lines.clear();
        t.all_local = true;
        for i in 0..n {
            let i_id = if rollback && i == n - 1 {
                UNUSED_ITEM
            } else {
                self.rng.item_id(k, ITEMS)
            };
            let supply_w_id = if self.warehouses > 1 && self.rng.uniform(1, 100) == 1 {
                t.all_local = false;
                self.remote_warehouse()
            } else {
                self.w_id
            };
            t.lines.push(Line {
                i_id,
                supply_w_id,
                quantity: self.rng.uniform(1, 10),
            });
        }
        t.lines.sort_by_key(|l| (l.supply_w_id, l.i_id));
        self.new_order = t;
    }

    fn draw_payment(&mut self, k: &Constants) {
        let d_id = self.rng.uniform(1, DISTRICTS);
        let (c_w_id, c_d_id) = if self.warehouses > 1 && self.rng.uniform(1, 100) > 85 {
            (self.remote_warehouse(), self.rng.uniform(1, DISTRICTS))
        } else {
            (self.w_id, d_id)
        };
        self.payment = Payment {
            w_id: self.w_id,
            d_id,
            c_w_id,
            c_d_id,
            customer: self.customer(k),
            amount: self.rng.money(100, 500_000),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_45_43_4_4_4_and_1_percent_of_new_orders_roll_back() {
        let mut t = Terminal::new(1, 0, 2);
        let mut counts = [0u64; 5];
        let (mut rollbacks, mut remote) = (0, 0);
        let n = 200_000;
        for _ in 0..n {
            let k = t.draw();
            counts[k as usize] += 1;
            if k == Kind::NewOrder {
                let no = &t.new_order;
                assert!((5..=15).contains(&no.lines.len()));
                rollbacks += no.lines.iter().any(|l| l.i_id == UNUSED_ITEM) as u64;
                remote += !no.all_local as u64;
                assert!(
                    no.lines
                        .windows(2)
                        .all(|w| (w[0].supply_w_id, w[0].i_id) <= (w[1].supply_w_id, w[1].i_id))
                );
            }
        }
        for (k, share) in MIX {
            let got = counts[k as usize] as f64 / n as f64 * 100.0;
            assert!((got - share as f64).abs() < 0.5, "{k:?}: {got}%");
        }
        let r = rollbacks as f64 / counts[0] as f64;
        assert!((0.007..0.013).contains(&r), "rollbacks {r}");
        // About 10 lines at 1% remote each: ~10% of orders have one.
        let rm = remote as f64 / counts[0] as f64;
        assert!((0.07..0.13).contains(&rm), "remote {rm}");
    }

    #[test]
    fn terminals_spread_over_warehouses_then_districts() {
        let homes: Vec<(u64, u64)> = (0..4)
            .map(|i| {
                let t = Terminal::new(1, i, 2);
                (t.w_id, t.d_id)
            })
            .collect();
        assert_eq!(homes, [(1, 1), (2, 1), (1, 2), (2, 2)]);
    }
}

//! The protocol-level probe that proves an engine serves, and the one
//! place where a probe becomes an address: the user and database it logs
//! in as, the database the benchmark's data goes in, and its store URL.

/// The database the benchmark's data goes in when the probe names none
/// (MySQL, MongoDB).
pub(crate) const DATA_DATABASE: &str = "benchcage";

/// A protocol-level probe (a TCP connect is not enough).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Probe {
    /// `PING` answered `PONG`.
    Redis,
    /// `SELECT 1` over the PostgreSQL protocol.
    Postgres { user: String, database: String },
    /// `SELECT 1` over the MySQL protocol.
    Mysql { user: String },
    /// `{ping: 1}` over the MongoDB wire protocol.
    Mongodb,
}

impl Probe {
    /// The user the probe logs in as (PostgreSQL, MySQL).
    pub fn user(&self) -> Option<&str> {
        match self {
            Probe::Postgres { user, .. } | Probe::Mysql { user } => Some(user.as_str()),
            Probe::Redis | Probe::Mongodb => None,
        }
    }

    /// The database the probe connects to (PostgreSQL's); the others
    /// connect without one, since the benchmark's may not exist yet.
    pub fn database(&self) -> Option<&str> {
        match self {
            Probe::Postgres { database, .. } => Some(database.as_str()),
            Probe::Redis | Probe::Mysql { .. } | Probe::Mongodb => None,
        }
    }

    /// The database the benchmark's data goes in: the probe's own, else
    /// [`DATA_DATABASE`]; Redis has none.
    pub(crate) fn data_database(&self) -> Option<&str> {
        match self {
            Probe::Redis => None,
            Probe::Postgres { database, .. } => Some(database.as_str()),
            Probe::Mysql { .. } | Probe::Mongodb => Some(DATA_DATABASE),
        }
    }

    /// The store URL of the engine on loopback `port`
    /// (`postgres://USER@127.0.0.1:PORT/DB`). MongoDB's leaves the database
    /// to the store, which picks [`DATA_DATABASE`] as well.
    pub fn url(&self, port: u16) -> String {
        self.url_at(&format!("127.0.0.1:{port}"))
    }

    /// The probe's URL at `hosts`: `HOST:PORT`, or a seed list
    /// `HOST:P1,HOST:P2` (a cluster's routers).
    pub fn url_at(&self, hosts: &str) -> String {
        let (scheme, database) = match self {
            Probe::Redis => ("redis", None),
            Probe::Postgres { .. } => ("postgres", self.data_database()),
            Probe::Mysql { .. } => ("mysql", self.data_database()),
            Probe::Mongodb => ("mongodb", None),
        };
        let user = self.user().map(|u| format!("{u}@")).unwrap_or_default();
        let path = database.map(|d| format!("/{d}")).unwrap_or_default();
        format!("{scheme}://{user}{hosts}{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_probe_becomes_a_loopback_url_with_its_user_and_database() {
        let pg = Probe::Postgres {
            user: "bench".into(),
            database: "db1".into(),
        };
        let my = Probe::Mysql {
            user: "root".into(),
        };
        assert_eq!(Probe::Redis.url(6379), "redis://127.0.0.1:6379");
        assert_eq!(pg.url(5432), "postgres://bench@127.0.0.1:5432/db1");
        assert_eq!(my.url(3306), "mysql://root@127.0.0.1:3306/benchcage");
        assert_eq!(Probe::Mongodb.url(27017), "mongodb://127.0.0.1:27017");
        assert_eq!((my.user(), my.database()), (Some("root"), None));
        assert_eq!(Probe::Mongodb.data_database(), Some(DATA_DATABASE));
        assert_eq!(Probe::Redis.data_database(), None);
    }
}

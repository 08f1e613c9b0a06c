//! The only importer of the `mongodb` crate (and its `bson`).

use super::{ClientError, Endpoint};
use ::mongodb::bson::doc;

fn err(ep: &Endpoint, e: impl std::fmt::Display) -> ClientError {
    ClientError::Mongodb {
        addr: ep.addr(),
        msg: e.to_string(),
    }
}

/// `version` from `buildInfo`.
pub async fn server_version(ep: &Endpoint) -> Result<String, ClientError> {
    let conn = MongoConn::connect(ep).await?;
    let reply = conn
        .client
        .database("admin")
        .run_command(doc! {"buildInfo": 1})
        .await
        .map_err(|e| err(ep, e))?;
    let v = reply
        .get_str("version")
        .map(str::to_string)
        .map_err(|e| err(ep, format!("buildInfo without a version: {e}")));
    conn.client.shutdown().await;
    v
}

/// One client (the driver pools connections inside it).
pub struct MongoConn {
    #[allow(dead_code)]
    ep: Endpoint,
    client: ::mongodb::Client,
}

impl MongoConn {
    /// Connects directly (no replica-set discovery) to a loopback endpoint.
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        let uri = format!(
            "mongodb://{}/?directConnection=true&serverSelectionTimeoutMS=3000&connectTimeoutMS=3000",
            ep.addr()
        );
        let client = ::mongodb::Client::with_uri_str(&uri)
            .await
            .map_err(|e| err(ep, e))?;
        Ok(MongoConn {
            ep: ep.clone(),
            client,
        })
    }
}

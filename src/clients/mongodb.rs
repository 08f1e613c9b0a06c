//! The only importer of the `mongodb` crate (and its `bson`).

use super::{ClientError, Endpoint};
use ::futures::TryStreamExt;
use ::mongodb::bson::{Bson, Document, doc};

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

/// One client (the driver pools connections inside it; each benchcage
/// worker has its own client, so one connection each).
pub struct MongoConn {
    ep: Endpoint,
    client: ::mongodb::Client,
    db: ::mongodb::Database,
}

impl MongoConn {
    /// Connects directly (no replica-set discovery) to a loopback endpoint.
    /// With a user, the driver authenticates (SCRAM) against the
    /// endpoint's auth source (`admin` by default, as mongod's URLs).
    /// The URI never holds the password, so no driver message can echo it.
    pub async fn connect(ep: &Endpoint) -> Result<Self, ClientError> {
        ep.check_loopback()?;
        let uri = format!(
            "mongodb://{}/?directConnection=true&serverSelectionTimeoutMS=3000&connectTimeoutMS=3000&maxPoolSize=1",
            ep.addr()
        );
        let mut opts = ::mongodb::options::ClientOptions::parse(&uri)
            .await
            .map_err(|e| err(ep, e))?;
        if let Some(user) = &ep.user {
            let mut cred = ::mongodb::options::Credential::default();
            cred.username = Some(user.clone());
            cred.password = ep.password.clone();
            cred.source = Some(ep.auth_source.clone().unwrap_or_else(|| "admin".into()));
            opts.credential = Some(cred);
        }
        let client = ::mongodb::Client::with_options(opts).map_err(|e| err(ep, e))?;
        let db = client.database(ep.database.as_deref().unwrap_or("benchcage"));
        Ok(MongoConn {
            ep: ep.clone(),
            client,
            db,
        })
    }
}

impl MongoConn {
    fn coll(&self, name: &str) -> ::mongodb::Collection<Document> {
        self.db.collection(name)
    }

    fn fail(&self, e: impl std::fmt::Display) -> ClientError {
        err(&self.ep, e)
    }

    /// Whether collection `name` holds at least one document (a missing
    /// collection holds none).
    pub async fn has_documents(&self, name: &str) -> Result<bool, ClientError> {
        let d = self
            .coll(name)
            .find_one(doc! {})
            .await
            .map_err(|e| self.fail(e))?;
        Ok(d.is_some())
    }

    /// Drops collection `name` (missing is fine).
    pub async fn drop_collection(&self, name: &str) -> Result<(), ClientError> {
        self.coll(name).drop().await.map_err(|e| self.fail(e))
    }

    /// Inserts `{_id: id, f1: v1, ...}`.
    pub async fn insert_fields<'a>(
        &self,
        coll: &str,
        id: &str,
        fields: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), ClientError> {
        self.coll(coll)
            .insert_one(fields_doc(id, fields))
            .await
            .map(|_| ())
            .map_err(|e| self.fail(e))
    }

    /// Inserts `{_id: id, f1: v1, ...}` for each record in one unordered
    /// `insertMany` (the server may apply them in any order and goes on
    /// past a failed one; the call then fails).
    pub async fn insert_fields_many<'a, P>(
        &self,
        coll: &str,
        records: impl Iterator<Item = (&'a str, P)>,
    ) -> Result<(), ClientError>
    where
        P: Iterator<Item = (&'a str, &'a str)>,
    {
        let docs: Vec<Document> = records.map(|(id, fields)| fields_doc(id, fields)).collect();
        self.coll(coll)
            .insert_many(docs)
            .ordered(false)
            .await
            .map(|_| ())
            .map_err(|e| self.fail(e))
    }

    /// Every document matching a JSON filter, sorted by `_id`, as relaxed
    /// extended JSON (for checking what a load wrote).
    pub async fn find_json(
        &self,
        coll: &str,
        filter: &serde_json::Value,
    ) -> Result<Vec<serde_json::Value>, ClientError> {
        let f = json_doc(filter).map_err(|e| self.fail(e))?;
        let mut cursor = self
            .coll(coll)
            .find(f)
            .sort(doc! {"_id": 1})
            .await
            .map_err(|e| self.fail(e))?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await.map_err(|e| self.fail(e))? {
            out.push(Bson::Document(d).into_relaxed_extjson());
        }
        Ok(out)
    }

    /// Finds `{_id: id}`; returns its number of fields (0 when missing).
    pub async fn find_id(&self, coll: &str, id: &str) -> Result<usize, ClientError> {
        let d = self
            .coll(coll)
            .find_one(doc! {"_id": id})
            .await
            .map_err(|e| self.fail(e))?;
        Ok(d.map(|d| d.len()).unwrap_or(0))
    }

    /// `$set` one field of `{_id: id}`; returns the documents matched.
    pub async fn set_field(
        &self,
        coll: &str,
        id: &str,
        field: &str,
        value: &str,
    ) -> Result<u64, ClientError> {
        let r = self
            .coll(coll)
            .update_one(doc! {"_id": id}, doc! {"$set": {field: value}})
            .await
            .map_err(|e| self.fail(e))?;
        Ok(r.matched_count)
    }

    /// Up to `limit` documents with `_id >= from` in `_id` order; returns how many.
    pub async fn scan_from(&self, coll: &str, from: &str, limit: i64) -> Result<u64, ClientError> {
        let cursor = self
            .coll(coll)
            .find(doc! {"_id": {"$gte": from}})
            .sort(doc! {"_id": 1})
            .limit(limit)
            .await
            .map_err(|e| self.fail(e))?;
        drain(cursor).await.map_err(|e| self.fail(e))
    }

    /// Inserts JSON documents in one `insertMany`.
    pub async fn insert_json_many(
        &self,
        coll: &str,
        docs: &[serde_json::Value],
    ) -> Result<(), ClientError> {
        let docs: Vec<Document> = docs
            .iter()
            .map(json_doc)
            .collect::<Result<_, _>>()
            .map_err(|e| self.fail(e))?;
        self.coll(coll)
            .insert_many(docs)
            .await
            .map(|_| ())
            .map_err(|e| self.fail(e))
    }

    /// Creates an index on `keys` (field, 1 or -1) in order.
    pub async fn create_index(&self, coll: &str, keys: &[(&str, i32)]) -> Result<(), ClientError> {
        let mut k = Document::new();
        for (f, dir) in keys {
            k.insert(*f, *dir);
        }
        let model = ::mongodb::IndexModel::builder().keys(k).build();
        self.coll(coll)
            .create_index(model)
            .await
            .map(|_| ())
            .map_err(|e| self.fail(e))
    }

    /// Runs a find with a JSON filter; returns the documents it returned.
    pub async fn count_find(
        &self,
        coll: &str,
        filter: &serde_json::Value,
    ) -> Result<u64, ClientError> {
        let f = json_doc(filter).map_err(|e| self.fail(e))?;
        let cursor = self.coll(coll).find(f).await.map_err(|e| self.fail(e))?;
        drain(cursor).await.map_err(|e| self.fail(e))
    }

    /// Data plus index bytes of a collection (`collStats`), when reported.
    pub async fn collection_bytes(&self, coll: &str) -> Result<Option<u64>, ClientError> {
        let r = self
            .db
            .run_command(doc! {"collStats": coll})
            .await
            .map_err(|e| self.fail(e))?;
        let num = |k: &str| match r.get(k) {
            Some(Bson::Int32(v)) => Some(*v as u64),
            Some(Bson::Int64(v)) => Some(*v as u64),
            Some(Bson::Double(v)) => Some(*v as u64),
            _ => None,
        };
        Ok(match (num("storageSize"), num("totalIndexSize")) {
            (Some(a), Some(b)) => Some(a + b),
            (Some(a), None) => Some(a),
            _ => num("size"),
        })
    }
}

/// `{_id: id, f1: v1, ...}`.
fn fields_doc<'a>(id: &str, fields: impl Iterator<Item = (&'a str, &'a str)>) -> Document {
    let mut d = Document::new();
    d.insert("_id", id);
    for (f, v) in fields {
        d.insert(f, v);
    }
    d
}

async fn drain(mut cursor: ::mongodb::Cursor<Document>) -> Result<u64, ::mongodb::error::Error> {
    let mut n = 0;
    while cursor.try_next().await?.is_some() {
        n += 1;
    }
    Ok(n)
}

fn json_doc(v: &serde_json::Value) -> Result<Document, String> {
    match Bson::try_from(v.clone()) {
        Ok(Bson::Document(d)) => Ok(d),
        Ok(other) => Err(format!("expected a JSON object, got {other}")),
        Err(e) => Err(e.to_string()),
    }
}

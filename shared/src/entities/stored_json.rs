//! JSON columns read into their types once, where rows are read, without
//! letting one unreadable value fail the statement that read it.
//!
//! A column typed [`StoredJson<T>`] holds the JSON as stored and what it
//! reads as: a `T`, or the reason it does not (the path inside the value
//! and serde's words), worked out the first time it is asked
//! ([`StoredJson::read`]) and kept. Reading a row never fails on such a
//! column, so a batch of rows is never held up by one written by a release
//! that stored another shape, or edited by hand: the code that acts on the
//! row asks [`StoredJson::read`] and quarantines that row alone
//! (docs/ARCHITECTURE.md, "Stored JSON"). sea-orm's `FromJsonQueryResult`
//! would fail the whole statement instead. The value is read as a `T` when
//! first asked rather than with the row because most statements return
//! whole rows whose spec nobody then reads: a propagation's parents, an
//! attempt's end.

use std::fmt;
use std::sync::OnceLock;

use sea_orm::sea_query::{ArrayType, ColumnType, Nullable, ValueType, ValueTypeErr};
use sea_orm::{ColIdx, QueryResult, TryGetError, TryGetable};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A JSON column's value and, once asked, what it reads as (boxed: a spec
/// is large, and rows are moved about in batches).
#[derive(Clone)]
pub struct StoredJson<T> {
    json: serde_json::Value,
    read: OnceLock<Result<Box<T>, UnreadableJson>>,
}

/// Two values are equal when what was stored is: what they read as follows.
impl<T> PartialEq for StoredJson<T> {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json
    }
}

impl<T> Eq for StoredJson<T> {}

/// Why a stored JSON value does not read as its column's type: where in the
/// value, and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnreadableJson(String);

impl<T: DeserializeOwned> StoredJson<T> {
    /// `json` as stored, to be read as a `T` when first asked.
    pub fn from_json(json: serde_json::Value) -> StoredJson<T> {
        StoredJson {
            json,
            read: OnceLock::new(),
        }
    }

    /// What the value reads as, or why it does not; worked out once.
    pub fn read(&self) -> Result<&T, &UnreadableJson> {
        self.read
            .get_or_init(|| {
                serde_path_to_error::deserialize::<_, Box<T>>(&self.json).map_err(|e| {
                    let path = e.path().to_string();
                    let inner = e.into_inner();
                    UnreadableJson(if path == "." {
                        inner.to_string()
                    } else {
                        format!("at {path}: {inner}")
                    })
                })
            })
            .as_deref()
    }
}

impl<T: Serialize> StoredJson<T> {
    /// `value`, to be stored.
    ///
    /// # Panics
    /// Never for this crate's column types: they serialize to JSON without
    /// error (string keys, no non-finite floats).
    pub fn new(value: T) -> StoredJson<T> {
        let json = serde_json::to_value(&value)
            .unwrap_or_else(|e| panic!("a stored JSON type encodes as JSON: {e}"));
        StoredJson {
            json,
            read: OnceLock::from(Ok(Box::new(value))),
        }
    }
}

impl<T> StoredJson<T> {
    /// The value as stored.
    pub fn json(&self) -> &serde_json::Value {
        &self.json
    }
}

impl<T> fmt::Debug for StoredJson<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.read.get() {
            Some(Err(e)) => write!(f, "unreadable ({e}): {}", self.json),
            _ => self.json.fmt(f),
        }
    }
}

impl<T> From<StoredJson<T>> for sea_orm::Value {
    fn from(stored: StoredJson<T>) -> Self {
        sea_orm::Value::Json(Some(Box::new(stored.json)))
    }
}

impl<T: DeserializeOwned> TryGetable for StoredJson<T> {
    fn try_get_by<I: ColIdx>(res: &QueryResult, index: I) -> Result<Self, TryGetError> {
        serde_json::Value::try_get_by(res, index).map(StoredJson::from_json)
    }
}

impl<T: DeserializeOwned> ValueType for StoredJson<T> {
    fn try_from(v: sea_orm::Value) -> Result<Self, ValueTypeErr> {
        match v {
            sea_orm::Value::Json(Some(json)) => Ok(StoredJson::from_json(*json)),
            _ => Err(ValueTypeErr),
        }
    }

    fn type_name() -> String {
        format!("StoredJson<{}>", std::any::type_name::<T>())
    }

    fn array_type() -> ArrayType {
        ArrayType::Json
    }

    fn column_type() -> ColumnType {
        ColumnType::Json
    }
}

impl<T> Nullable for StoredJson<T> {
    fn null() -> sea_orm::Value {
        sea_orm::Value::Json(None)
    }
}

impl<T> sea_orm::IntoActiveValue<StoredJson<T>> for StoredJson<T>
where
    StoredJson<T>: Into<sea_orm::Value>,
{
    fn into_active_value(self) -> sea_orm::ActiveValue<StoredJson<T>> {
        sea_orm::ActiveValue::set(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::DepType;

    #[test]
    fn a_value_of_another_shape_is_kept_with_where_it_goes_wrong() {
        let stored = StoredJson::<Vec<(i64, DepType)>>::from_json(serde_json::json!([
            [4, "STRONG"],
            [5, "SOMETIMES"]
        ]));
        let error = stored.read().expect_err("SOMETIMES is no edge type");
        assert!(
            error
                .to_string()
                .starts_with("at [1][1]: unknown variant `SOMETIMES`"),
            "{error}"
        );
        assert_eq!(stored.json()[1][1], "SOMETIMES", "the stored value is kept");
    }

    #[test]
    fn a_value_reads_back_as_it_was_stored() {
        let children = vec![(4, DepType::Strong), (5, DepType::Weak)];
        let stored = StoredJson::new(children.clone());
        let again = StoredJson::<Vec<(i64, DepType)>>::from_json(stored.json().clone());
        assert_eq!(again.read(), Ok(&children));
        assert_eq!(again, stored);
    }
}

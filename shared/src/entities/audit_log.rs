//! `audit_log`: one row per change made through the API or an operator
//! command that writes the database directly: who, what, when, from where.

use sea_orm::entity::prelude::*;

/// An audited change.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_log")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// When it was answered.
    pub at: DateTimeUtc,
    /// Who: a token's name, `anonymous` on an API without tokens, or
    /// `os:<user>` for an operator command.
    pub actor: String,
    /// The role it acted with (`admin` for operator commands).
    pub role: String,
    /// What: `POST /api/v1/dags/{dagId}/trigger`, or a command such as
    /// `secret set`.
    pub action: String,
    /// The concrete path or object it acted on.
    pub target: String,
    /// The HTTP status of the answer (0 for operator commands that
    /// succeeded).
    pub status: i16,
    /// Where from: the client's address, or `cli@<host>`.
    pub origin: String,
}

/// No declared relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

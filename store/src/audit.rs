//! The audit log: one row per change, written by the API after it answers
//! a change and by the operator commands that write the database directly
//! (`secret`, `datasource`, `token`, `alerts`).

use chrono::Utc;
use sea_orm::{
    ActiveValue::Set, DatabaseConnection, DbErr, EntityTrait, PaginatorTrait, QueryOrder,
};

use datajump_shared::entities::audit_log::{self, Model};

/// Longest `target` kept; a longer one is cut (paths and names are short).
const MAX_TARGET: usize = 2048;

/// One change, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Who: a token's name, `anonymous`, or `os:<user>`.
    pub actor: String,
    /// The role acted with.
    pub role: String,
    /// What, e.g. `POST /api/v1/dags/{dagId}/trigger` or `secret set`.
    pub action: String,
    /// On what, e.g. `/api/v1/dags/3/trigger` or a secret's name.
    pub target: String,
    /// The answer's HTTP status; 0 for an operator command that succeeded.
    pub status: u16,
    /// Where from: the client's address, or `cli@<host>`.
    pub origin: String,
}

/// Stores `entry`, stamped now.
pub async fn record(db: &DatabaseConnection, entry: Entry) -> Result<(), DbErr> {
    let mut target = entry.target;
    if target.len() > MAX_TARGET {
        let mut end = MAX_TARGET;
        while !target.is_char_boundary(end) {
            end -= 1;
        }
        target.truncate(end);
    }
    audit_log::Entity::insert(audit_log::ActiveModel {
        at: Set(Utc::now()),
        actor: Set(entry.actor),
        role: Set(entry.role),
        action: Set(entry.action),
        target: Set(target),
        status: Set(i16::try_from(entry.status).unwrap_or(i16::MAX)),
        origin: Set(entry.origin),
        ..Default::default()
    })
    .exec(db)
    .await?;
    Ok(())
}

/// Page `page` (1-based) of `size` entries, newest first, and the total.
pub async fn list(
    db: &DatabaseConnection,
    page: u64,
    size: u64,
) -> Result<(Vec<Model>, u64), DbErr> {
    let paginator = audit_log::Entity::find()
        .order_by_desc(audit_log::Column::Id)
        .paginate(db, size);
    let total = paginator.num_items().await?;
    Ok((paginator.fetch_page(page.saturating_sub(1)).await?, total))
}

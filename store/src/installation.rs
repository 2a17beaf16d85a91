//! The installation's identity, which every role reads once at start to
//! name its messages ([`Installation`]).

use sea_orm::{ConnectionTrait, DbErr, EntityTrait};
use thiserror::Error;

use datajump_shared::entities::installation;
use datajump_shared::subjects::{Installation, InvalidInstallation};

/// Why the identity could not be read.
#[derive(Debug, Error)]
pub enum InstallationError {
    /// The database failed, or has no `installation` table yet.
    #[error("cannot read the installation identity (run `datajump migrate` first?): {0}")]
    Db(#[from] DbErr),
    /// The table is empty: someone deleted the row.
    #[error(
        "the database has no installation row; it is written by `datajump migrate` when the database is created, so restore it from a backup rather than inventing one"
    )]
    Missing,
    /// The row holds something else than an identity.
    #[error(transparent)]
    Invalid(#[from] InvalidInstallation),
}

/// Reads this database's installation identity.
pub async fn identity<C: ConnectionTrait>(db: &C) -> Result<Installation, InstallationError> {
    let row = installation::Entity::find()
        .one(db)
        .await?
        .ok_or(InstallationError::Missing)?;
    Ok(Installation::parse(&row.id)?)
}

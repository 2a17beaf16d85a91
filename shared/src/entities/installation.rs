//! `installation`: the one row naming this database, written by the
//! migration that creates it ([`crate::subjects::Installation`]).

use sea_orm::entity::prelude::*;

/// The installation.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "installation")]
pub struct Model {
    /// The identity every message id and `dj_ticker` key carries.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// When the database was created.
    pub created_at: DateTimeUtc,
}

/// No relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

//! Who may do what: the roles an API token carries.
//!
//! Three roles, each allowed what the one below it is and more: a viewer
//! reads; an operator also runs things (trigger, kill, rerun, backfill,
//! mark, clear, events, putting DAGs and schedules online or offline); an
//! admin also changes what runs (DAGs, schedules, datasources, secrets,
//! tokens) and reads the audit log. The API's route table names the role
//! each route needs.

use sea_orm::sea_query::StringLen;
use sea_orm::{DeriveActiveEnum, EnumIter};
use serde::{Deserialize, Serialize};

/// A token's role, ordered by what it allows.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    EnumIter,
    DeriveActiveEnum,
    Serialize,
    Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::N(16))")]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads everything but the audit log.
    #[sea_orm(string_value = "viewer")]
    Viewer,
    /// Also runs and stops things.
    #[sea_orm(string_value = "operator")]
    Operator,
    /// Also changes what runs, and manages credentials and tokens.
    #[sea_orm(string_value = "admin")]
    Admin,
}

impl Role {
    /// Every role, weakest first.
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    /// The role named `name`.
    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// Whether this role is allowed what `needed` is.
    pub fn allows(self, needed: Role) -> bool {
        self >= needed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered() {
        assert!(Role::Admin.allows(Role::Operator));
        assert!(Role::Operator.allows(Role::Viewer));
        assert!(!Role::Viewer.allows(Role::Operator));
        assert!(!Role::Operator.allows(Role::Admin));
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("root"), None);
    }
}

//! Who may do what: the role an API token carries, and the projects it
//! reaches.
//!
//! Three roles, each allowed what the one below it is and more: a viewer
//! reads; an operator also runs things (trigger, kill, rerun, backfill,
//! mark, clear, events, putting DAGs and schedules online or offline); an
//! admin also changes what runs (DAGs, schedules, datasources, secrets,
//! tokens) and reads the audit log. The API's route table names the role
//! each route needs.
//!
//! A token also has a [`Reach`]: every project, or one. A token limited to
//! a project sees and acts on that project's DAGs, runs, tokens and
//! nothing else, as if the rest did not exist; what belongs to no project
//! (the audit log, metrics, events, which start DAGs of any project) needs
//! a token that reaches everything.

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
    schemars::JsonSchema,
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

/// Which projects a token, and whoever holds it, reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reach {
    /// Every project, and what belongs to none.
    Everything,
    /// One project's DAGs, runs and tokens only.
    Project(i64),
}

impl Reach {
    /// The reach a nullable `project_id` column stores (`NULL`: everything).
    pub fn from_column(project_id: Option<i64>) -> Reach {
        project_id.map_or(Reach::Everything, Reach::Project)
    }

    /// The value of a `project_id` column for this reach.
    pub fn project_id(self) -> Option<i64> {
        match self {
            Reach::Everything => None,
            Reach::Project(id) => Some(id),
        }
    }

    /// Whether what belongs to `project_id` is within reach.
    pub fn includes(self, project_id: i64) -> bool {
        self == Reach::Everything || self == Reach::Project(project_id)
    }

    /// Whether everything `other` reaches is within this reach: a token may
    /// only create tokens its own reach covers.
    pub fn covers(self, other: Reach) -> bool {
        match other {
            Reach::Everything => self == Reach::Everything,
            Reach::Project(id) => self.includes(id),
        }
    }
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reach::Everything => f.write_str("every project"),
            Reach::Project(id) => write!(f, "project {id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_reach_covers_only_itself() {
        let (all, two, three) = (Reach::Everything, Reach::Project(2), Reach::Project(3));
        assert!(all.covers(two) && all.covers(all) && two.covers(two));
        assert!(!two.covers(all) && !two.covers(three));
        assert!(two.includes(2) && !two.includes(3) && all.includes(3));
        assert_eq!(Reach::from_column(None), all);
        assert_eq!(Reach::from_column(Some(2)).project_id(), Some(2));
    }

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

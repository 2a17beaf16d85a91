//! Which parts of a DAG definition a role must understand, and which roles
//! understand them: how `dag apply` keeps a DAG away from an installation
//! whose roles would misread it (docs/OPERATIONS.md, "Upgrading DataJump").
//!
//! Roles are upgraded one at a time, so for a while an older runner or
//! resolver may be live beside newer ones. Each role says in its heartbeat
//! the [`FeatureLevel`] of its build; each [`Feature`] a DAG can use names
//! the level that introduced it and the role that acts on it. The API
//! refuses a definition that uses a feature some live role of that kind is
//! too old for, naming the feature, the task and the role, rather than let
//! the old role fail or misread the task when it runs.

use serde::{Deserialize, Serialize};

use crate::dag_file::DagFile;

/// What a build of the roles understands of DAG definitions: the highest
/// [`Feature::level`] it knows. Raised by one with each release that adds a
/// feature an older role would misread.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct FeatureLevel(u32);

impl FeatureLevel {
    /// What a role built before roles reported a level understands: every
    /// feature up to and including the first release of role versions,
    /// less those listed in [`Feature`] (their heartbeats carry no level).
    pub const BEFORE_LEVELS: FeatureLevel = FeatureLevel(0);

    /// This build's level.
    pub const CURRENT: FeatureLevel = FeatureLevel(1);

    /// The level as a number, for messages and metrics.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl std::fmt::Display for FeatureLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The roles whose heartbeats say what they understand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoleKind {
    /// Runs tasks; what a task's type and content mean is its.
    Runner,
    /// Creates runs; what strategies, schedules and plans mean is its.
    Resolver,
}

impl RoleKind {
    /// `runner` or `resolver`.
    pub fn as_str(self) -> &'static str {
        match self {
            RoleKind::Runner => "runner",
            RoleKind::Resolver => "resolver",
        }
    }
}

/// A part of a DAG definition that roles of some kind understand only from
/// a given [`FeatureLevel`] on. The baseline, everything a role before
/// levels understood, is not listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// A SPARK or FLINK `conf` value naming `${secret:…}`: a runner before
    /// level 1 fails such an attempt, since it allowed secrets in HTTP
    /// headers only.
    SecretInSubmitConf,
}

impl Feature {
    /// Every feature, oldest first.
    pub const ALL: [Feature; 1] = [Feature::SecretInSubmitConf];

    /// The level that introduced it.
    pub fn level(self) -> FeatureLevel {
        match self {
            Feature::SecretInSubmitConf => FeatureLevel(1),
        }
    }

    /// The role that acts on it, and so must understand it.
    pub fn role(self) -> RoleKind {
        match self {
            Feature::SecretInSubmitConf => RoleKind::Runner,
        }
    }

    /// What it is, in the words of docs/DAG_FORMAT.md.
    pub fn describe(self) -> &'static str {
        match self {
            Feature::SecretInSubmitConf => "a SPARK or FLINK conf value naming ${secret:…}",
        }
    }
}

/// One use of a [`Feature`] in a DAG.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FeatureUse {
    /// The feature.
    pub feature: Feature,
    /// The task using it, when a task does.
    pub task: Option<String>,
    /// The runner queue that task is sent to: only runners serving it need
    /// to understand a runner's feature.
    pub queue: Option<String>,
}

/// Every use of a listed [`Feature`] in `file`, in task order.
pub fn features_used(file: &DagFile) -> Vec<FeatureUse> {
    let mut uses = Vec::new();
    for task in &file.tasks {
        let secret_in_conf = task.parsed_content().is_some_and(|content| {
            content
                .conf()
                .is_some_and(|conf| conf.values().any(|value| value.names_a_secret()))
        });
        if secret_in_conf {
            uses.push(FeatureUse {
                feature: Feature::SecretInSubmitConf,
                task: Some(task.name.clone()),
                queue: Some(task.queue.clone()),
            });
        }
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_is_known_to_this_build_and_none_to_roles_before_levels() {
        for feature in Feature::ALL {
            assert!(feature.level() <= FeatureLevel::CURRENT, "{feature:?}");
            assert!(feature.level() > FeatureLevel::BEFORE_LEVELS, "{feature:?}");
        }
        assert!(Feature::ALL.is_sorted_by_key(|f| f.level()));
    }

    #[test]
    fn a_heartbeat_without_a_level_reads_as_before_levels() {
        #[derive(Deserialize)]
        struct Beat {
            #[serde(default)]
            features: FeatureLevel,
        }
        let old: Beat = serde_json::from_str(r#"{"id": "r1"}"#).expect("old heartbeat");
        assert_eq!(old.features, FeatureLevel::BEFORE_LEVELS);
        let new: Beat = serde_json::from_str(r#"{"features": 1}"#).expect("new heartbeat");
        assert_eq!(new.features, FeatureLevel::CURRENT);
    }

    #[test]
    fn a_secret_in_a_submit_conf_is_a_runner_feature_of_its_task_and_queue() {
        let file = DagFile::parse(
            r#"
name: jobs
tasks:
  - name: spark
    type: SPARK
    queue: bigdata
    content: { jar: /jobs/s.jar, conf: { spark.hadoop.fs.s3a.secret.key: "${secret:s3_key}" } }
  - name: plain
    type: SPARK
    content: { jar: /jobs/s.jar, conf: { spark.executor.cores: 2 } }
  - name: shell
    type: SHELL
    command: echo ${secret_word}
"#,
        )
        .expect("valid DAG");
        assert_eq!(
            features_used(&file),
            vec![FeatureUse {
                feature: Feature::SecretInSubmitConf,
                task: Some("spark".into()),
                queue: Some("bigdata".into()),
            }]
        );
        assert_eq!(Feature::SecretInSubmitConf.role(), RoleKind::Runner);
    }
}

//! The request and response bodies of the dataset routes: datasets with their
//! lineage, their events and announcements ([`super`]); those several route
//! modules share are in [`crate::dto`].

use chrono::{DateTime, Utc};
use datajump_shared::datasets::EventSource;
use datajump_shared::entities::dataset_event;
use datajump_store::datasets::{Consumer, Dataset, Producer};
use serde::{Deserialize, Serialize};

/// `?project=&page=&pageSize=` of the dataset lists.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatasetQuery {
    /// The project (default: the caller's token's, or the default one).
    pub project: Option<i64>,
    /// 1-based page (default 1).
    pub page: Option<u64>,
    /// Items per page (default 20, at most 500).
    pub page_size: Option<u64>,
}

/// `?project=&partition=&page=&pageSize=` of a dataset's events.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatasetEventQuery {
    /// The project (default: the caller's token's, or the default one).
    pub project: Option<i64>,
    /// Only events of this partition.
    pub partition: Option<String>,
    /// 1-based page (default 1).
    pub page: Option<u64>,
    /// Items per page (default 20, at most 500).
    pub page_size: Option<u64>,
}

/// A task that writes a dataset.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProducerDto {
    /// Its DAG's name.
    pub dag: String,
    /// The task.
    pub task: String,
    /// The partition it writes, as declared (`${bizdate}`).
    pub partition: Option<String>,
}

/// A data schedule that waits for a dataset.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerDto {
    /// Its DAG's name.
    pub dag: String,
    /// The schedule.
    pub schedule: String,
    /// Whether it fires: the schedule is active and its DAG online.
    pub active: bool,
}

/// A dataset event.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetEventDto {
    /// Its id; later events have larger ones.
    pub id: i64,
    /// The dataset.
    pub dataset: String,
    /// The partition written, if the dataset is partitioned.
    pub partition: Option<String>,
    /// `TASK` or `API`.
    pub source: EventSource,
    /// The run whose task wrote it.
    pub dag_run_id: Option<i64>,
    /// The task instance that wrote it.
    pub task_instance_id: Option<i64>,
    /// What the writer said about it (a task's declared outputs).
    pub metadata: Option<serde_json::Value>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
}

impl From<dataset_event::Model> for DatasetEventDto {
    fn from(row: dataset_event::Model) -> DatasetEventDto {
        DatasetEventDto {
            id: row.id,
            dataset: row.dataset,
            partition: row.partition,
            source: row.source,
            dag_run_id: row.dag_run_id,
            task_instance_id: row.task_instance_id,
            metadata: row.metadata,
            created_at: row.created_at,
        }
    }
}

/// A dataset and its lineage.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatasetDto {
    /// Its name.
    pub name: String,
    /// Its project.
    pub project_id: i64,
    /// The tasks that write it.
    pub producers: Vec<ProducerDto>,
    /// The data schedules that wait for it.
    pub consumers: Vec<ConsumerDto>,
    /// Its newest event.
    pub last_event: Option<DatasetEventDto>,
    /// Events recorded for it.
    pub events: u64,
}

impl DatasetDto {
    pub(super) fn of(project_id: i64, dataset: Dataset) -> DatasetDto {
        DatasetDto {
            name: dataset.name,
            project_id,
            producers: dataset
                .producers
                .into_iter()
                .map(
                    |Producer {
                         dag,
                         task,
                         partition,
                     }| ProducerDto {
                        dag,
                        task,
                        partition,
                    },
                )
                .collect(),
            consumers: dataset
                .consumers
                .into_iter()
                .map(
                    |Consumer {
                         dag,
                         schedule,
                         active,
                     }| ConsumerDto {
                        dag,
                        schedule,
                        active,
                    },
                )
                .collect(),
            last_event: dataset.last_event.map(DatasetEventDto::from),
            events: dataset.events,
        }
    }
}

/// What an announcement did.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnnouncedDto {
    /// The event recorded.
    pub event: DatasetEventDto,
    /// The DAGs it started a run of (their data schedules are met), by name.
    pub starts: Vec<String>,
}
